package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
)

// BenchmarkUpgradeWorkloadCluster measures, on one local management cluster:
//   - upgrade-s: `flotilla upgrade cluster --kubeconfig` of a workload cluster with 3 workers
//     from Kubernetes 1.35 to 1.36, every phase included, until its control plane reports
//     v1.36.3, every worker Machine runs it and is Ready, and the cluster is Ready.
func BenchmarkUpgradeWorkloadCluster(b *testing.B) {
	for range b.N {
		runUpgradeBenchmark(b)
	}
}

func runUpgradeBenchmark(b *testing.B) {
	ctx := b.Context()
	c, home, out := newBenchClient(b)

	mgmtSpec := writeSpec(b, out, spec.GenerateOptions{Name: "mgmt", Provider: spec.ProviderLocal, Management: true})
	if err := c.CreateManagementCluster(ctx, client.CreateManagementClusterOptions{File: mgmtSpec, OutDir: out}); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := c.DeleteManagementCluster(context.Background(), client.DeleteManagementClusterOptions{Name: "mgmt", OutDir: out, Force: true}); err != nil {
			b.Error(err)
		}
	}()
	kubeconfig := client.UserKubeconfigPath(out, "mgmt")

	w1 := func(version string) string {
		dir := filepath.Join(out, version)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		return writeSpec(b, dir, spec.GenerateOptions{Name: "w1", Provider: spec.ProviderLocal, KubernetesVersion: version, Workers: 3})
	}
	// Registered before the create: a create that fails half-way leaves processes to stop too.
	defer func() {
		err := c.DeleteWorkloadCluster(context.Background(), client.DeleteWorkloadClusterOptions{Name: "w1", Namespace: "default", Kubeconfig: kubeconfig, OutDir: out})
		if err != nil {
			b.Error(err)
		}
		_ = controlplane.Delete(context.Background(), filepath.Join(home, "clusters", "w1"))
	}()
	if err := c.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: w1("1.35"), Kubeconfig: kubeconfig, OutDir: out}); err != nil {
		b.Fatal(err)
	}

	upgraded := w1("1.36")
	start := time.Now()
	if err := c.UpgradeWorkloadCluster(ctx, client.UpgradeWorkloadClusterOptions{File: upgraded, Kubeconfig: kubeconfig, OutDir: out}); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "upgrade-s")
}
