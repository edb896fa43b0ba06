package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// benchmarkPackagesAndAddons measures curated packages and Helm addons on the management
// benchmark's fleet (names: its workload clusters; withWorkers: those with worker Nodes):
//   - packages-10x3-s: three packages applied at once on each of ten clusters, until all are Ready;
//   - package-ready-p50-s: one Package applied → Ready, its chart cached, median of three;
//   - addon-fleet-s: one HelmChartProxy selecting every workload cluster, until its release is
//     Ready in each;
//   - addon-releases-per-s: five more such proxies applied at once, releases made per second
//     until all of them are Ready (they are deleted again before the rows below);
//   - drift-restore-p50-s: the addon's Deployment deleted in a workload cluster, until drift
//     correction has put it back, median of three.
func benchmarkPackagesAndAddons(b *testing.B, c *client.Client, kc ctrlclient.Client, kubeconfig, out string, names, withWorkers []string) {
	ctx := b.Context()
	addr := startRegistry(b, c)
	defer func() { _ = c.StopRegistry(context.Background()) }()
	published, err := c.Publish(ctx, client.PublishOptions{Registry: addr, Connection: registryconn.Config{PlainHTTP: true}})
	if err != nil {
		b.Fatal(err)
	}
	key, err := os.ReadFile(published.PublicKey)
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range names {
		if _, err := c.InstallPackageController(ctx, kubeconfig, client.PackageControllerOptions{
			Cluster: name, Registry: addr, Repository: published.Repository, PublicKey: key, PlainHTTP: ptr.To(true),
		}); err != nil {
			b.Fatal(err)
		}
	}

	// Ten clusters without workers (the releases' Pods stay Pending; Ready means installed).
	var ten []string
	for _, name := range names {
		if len(ten) < 10 && !slices.Contains(withWorkers, name) {
			ten = append(ten, name)
		}
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 3*len(ten))
	// Per cluster in this order: hello-stack depends on flotilla-greeter, and its controller
	// creates the dependency's Package if it does not exist yet, which the CLI then refuses to
	// install again.
	packages := []string{"flotilla-greeter", "hello-flotilla", "hello-stack"}
	for _, cluster := range ten {
		wg.Go(func() {
			for _, pkg := range packages {
				if _, err := c.InstallPackage(ctx, kubeconfig, client.InstallPackageOptions{Cluster: cluster, Package: pkg}); err != nil {
					errs <- err
					return
				}
			}
			for _, pkg := range packages {
				if _, err := c.WaitPackageReady(ctx, kubeconfig, cluster, pkg, 3*time.Minute); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "packages-10x3-s")

	var times []float64
	for _, cluster := range withWorkers {
		start := time.Now()
		if _, err := c.InstallPackage(ctx, kubeconfig, client.InstallPackageOptions{Cluster: cluster, Package: "hello-flotilla"}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.WaitPackageReady(ctx, kubeconfig, cluster, "hello-flotilla", 3*time.Minute); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start).Seconds())
	}
	slices.Sort(times)
	b.ReportMetric(times[len(times)/2], "package-ready-p50-s")

	// A proxy as the quickstart applies it: the latest chart, a values template, drift correction
	// (corrected through the watches on the workload clusters: no short interval needed).
	addon := func(name string) string {
		return fmt.Sprintf(`apiVersion: addons.flotilla.dev/v1alpha1
kind: HelmChartProxy
metadata: {name: %s, namespace: default}
spec:
  clusterSelector:
    matchExpressions: [{key: cluster.flotilla.dev/management, operator: DoesNotExist}]
  repoURL: oci://%s/flotilla
  chartName: hello-flotilla
  namespace: %s
  registry: {plainHTTP: true}
  driftCorrection: {mode: Enabled}
  valuesTemplate: "message: Hello {{ .Cluster.metadata.name }}\n"
`, name, addr, name)
	}
	applyAddons := func(file string, names ...string) float64 {
		var manifest string
		for _, name := range names {
			manifest += "---\n" + addon(name)
		}
		if err := os.WriteFile(file, []byte(manifest), 0o600); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := c.ApplyFile(ctx, client.ApplyFileOptions{File: file, Kubeconfig: kubeconfig, Wait: 3 * time.Minute}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start).Seconds()
	}
	elapsed := applyAddons(filepath.Join(out, "fleet-addon.yaml"), "fleet-addon")
	hcp := &addonsv1.HelmChartProxy{}
	if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "fleet-addon"}, hcp); err != nil {
		b.Fatal(err)
	}
	if len(hcp.Status.MatchingClusters) != len(names) {
		b.Fatalf("fleet-addon selects %d clusters, want %d", len(hcp.Status.MatchingClusters), len(names))
	}
	b.ReportMetric(elapsed, "addon-fleet-s")

	// Sustained: a batch far larger than one proxy's fan-out, all of it applied at once.
	var batch []string
	for i := range 5 {
		batch = append(batch, fmt.Sprintf("fleet-addon-%d", i))
	}
	elapsed = applyAddons(filepath.Join(out, "fleet-addons.yaml"), batch...)
	b.ReportMetric(float64(len(batch)*len(names))/elapsed, "addon-releases-per-s")
	for _, name := range batch {
		if err := kc.Delete(ctx, &addonsv1.HelmChartProxy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
			b.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &addonsv1.HelmChartProxyList{}
		if err := kc.List(ctx, list, ctrlclient.InNamespace("default")); err != nil {
			return false, err
		}
		return len(list.Items) == 1, nil
	})
	if err != nil {
		b.Fatalf("the batch's HelmChartProxies did not go: %v", err)
	}

	times = nil
	for _, cluster := range withWorkers {
		wc, err := client.KubeClient(client.UserKubeconfigPath(out, cluster))
		if err != nil {
			b.Fatal(err)
		}
		key := ctrlclient.ObjectKey{Namespace: "fleet-addon", Name: "fleet-addon-hello-flotilla"}
		deploy := &appsv1.Deployment{}
		if err := wc.Get(ctx, key, deploy); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := wc.Delete(ctx, deploy); err != nil {
			b.Fatal(err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, false, func(ctx context.Context) (bool, error) {
			restored := &appsv1.Deployment{}
			err := wc.Get(ctx, key, restored)
			switch {
			case apierrors.IsNotFound(err):
				return false, nil
			case err != nil:
				return false, err
			}
			return restored.UID != deploy.UID && restored.DeletionTimestamp == nil, nil
		})
		if err != nil {
			b.Fatalf("the deleted Deployment of %s was not restored: %v", cluster, err)
		}
		times = append(times, time.Since(start).Seconds())
	}
	slices.Sort(times)
	b.ReportMetric(times[len(times)/2], "drift-restore-p50-s")
}

// startRegistry starts the embedded registry on a free loopback port and returns its address;
// the caller stops it.
func startRegistry(b *testing.B, c *client.Client) string {
	b.Helper()
	port, err := controlplane.PickPort("127.0.0.1")
	if err != nil {
		b.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	if _, err := c.EnsureRegistry(b.Context(), client.RegistryOptions{Listen: addr}); err != nil {
		b.Fatal(err)
	}
	return addr
}
