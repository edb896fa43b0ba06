package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/addons/values"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// fleet is the local management cluster every scenario of this package shares. Creating one
// takes most of a minute, so TestFleet creates it once, the way `make quickstart` does, and runs
// each scenario against it; the scenarios that stop or delete it run last.
type fleet struct {
	// home is the management cluster's $FLOTILLA_HOME; out the directory create wrote into.
	home, out string
	// c is the admin's CLI client.
	c *client.Client
	// specFile is the management cluster's spec; createOutput what create printed.
	specFile, createOutput string
	// kubeconfig is ./mgmt/mgmt.kubeconfig; admin a client with it.
	kubeconfig string
	admin      ctrlclient.Client
}

// TestFleet creates the management cluster mgmt (1 control plane, 2 workers), then runs the
// scenarios of issues 2, 3 and 13 against it, and finally deletes it.
func TestFleet(t *testing.T) {
	f := newFleet(t)
	t.Run("management cluster", func(t *testing.T) { testManagementCluster(t, f) })
	t.Run("cluster creator role", func(t *testing.T) { testClusterCreatorRole(t, f) })
	t.Run("upgrade workload cluster", func(t *testing.T) { testUpgradeWorkloadCluster(t, f) })
	t.Run("upgrade management cluster", func(t *testing.T) { testUpgradeManagementCluster(t, f) })
	t.Run("packages and addons", func(t *testing.T) { testPackagesAndAddons(t, f) })
	t.Run("real nodes", func(t *testing.T) { testRealNodes(t, f) })
	t.Run("supervision", func(t *testing.T) { testSupervision(t, f) })
	t.Run("manager restart", func(t *testing.T) { testManagerRestart(t, f) })
	t.Run("delete", func(t *testing.T) { testDeleteManagementCluster(t, f) })
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	g := NewWithT(t)
	f := &fleet{home: t.TempDir(), out: t.TempDir()}
	var progress bytes.Buffer
	f.c = newClient(t, f.home, &progress)
	f.specFile = writeClusterSpec(t, filepath.Join(f.out, "mgmt.yaml"),
		spec.GenerateOptions{Name: "mgmt", Provider: spec.ProviderLocal, Management: true, KubernetesVersion: "1.35", Workers: 2})

	start := time.Now()
	err := f.c.CreateManagementCluster(t.Context(), client.CreateManagementClusterOptions{File: f.specFile, OutDir: f.out})
	f.createOutput = progress.String()
	t.Cleanup(func() {
		if t.Failed() {
			keeper := process.InDir(filepath.Join(f.home, "clusters", "mgmt"))
			t.Logf("the end of the manager's log:\n%s", keeper.LogTail("manager", 60))
		}
		// A scenario that failed before the delete scenario leaves everything running.
		_ = f.c.DeleteManagementCluster(context.Background(), client.DeleteManagementClusterOptions{Name: "mgmt", OutDir: f.out, Force: true})
	})
	g.Expect(err).NotTo(HaveOccurred(), f.createOutput)
	t.Logf("management cluster Ready in %s", time.Since(start).Round(time.Millisecond))

	f.kubeconfig = client.UserKubeconfigPath(f.out, "mgmt")
	f.admin, err = client.KubeClient(f.kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	return f
}

// newClient returns a client whose manager processes run the flotilla binary built for this test
// run, using the machine's control plane binaries.
func newClient(t *testing.T, home string, out *bytes.Buffer) *client.Client {
	t.Helper()
	c, err := client.New(home, binaries.DefaultRoot(), out)
	if err != nil {
		t.Fatal(err)
	}
	c.Executable = builtBinary
	c.WaitTimeout = 3 * time.Minute
	return c
}

// writeClusterSpec writes the spec flotilla generate clusterconfig prints for o to path.
func writeClusterSpec(t *testing.T, path string, o spec.GenerateOptions) string {
	t.Helper()
	data, err := spec.Generate(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// builtBinary is cmd/flotilla, built by TestMain for this test binary.
var builtBinary string

// TestMain builds the flotilla binary the manager processes run, once, and removes it after.
func TestMain(m *testing.M) {
	values.RunWorkerIfRequested() // DiffAddon renders in this process
	dir, err := os.MkdirTemp("", "flotilla-e2e-bin")
	if err != nil {
		panic(err)
	}
	builtBinary = filepath.Join(dir, "flotilla")
	out, err := exec.Command("go", "build", "-o", builtBinary, "github.com/flotilla-dev/flotilla/cmd/flotilla").CombinedOutput()
	code := 1
	if err == nil {
		code = m.Run()
	} else {
		fmt.Fprintf(os.Stderr, "building flotilla: %v\n%s", err, out)
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// clusterctlBinary is CAPI's clusterctl, which `make test` builds into the tools cache.
func clusterctlBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CLUSTERCTL")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(home, ".cache", "flotilla", "tools", "clusterctl-v1.14.2")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("clusterctl is missing at %s: build it with `make %s` (make test does)", path, path)
	}
	return path
}

// runningPIDs returns the pid of every process of the cluster whose data is in dir, by name.
func runningPIDs(t *testing.T, dir string) map[string]int {
	t.Helper()
	s := process.InDir(dir)
	names, err := s.Names()
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{}
	for _, name := range names {
		if pid, ok := s.Running(name); ok {
			pids[name] = pid
		}
	}
	return pids
}
