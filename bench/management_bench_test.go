package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// BenchmarkManagementCluster measures, on one local management cluster:
//   - create-s: `flotilla create cluster` of a management cluster (1 control plane, 2 workers)
//     to Ready, every phase included;
//   - cp-p50-s: a workload control plane, from the Cluster applied to its kubeconfig Secret and
//     /readyz answering through it, median of sequential creations;
//   - cp-10-at-once-s: ten such control planes applied at once, until all are ready;
//   - workload-create-p50-s: `flotilla create cluster --kubeconfig` of a workload cluster of the
//     same shape to Ready, median of three created one after the other before any other workload
//     cluster, and management-vs-workload-x, how many times faster that is than the management
//     cluster's create;
//   - manager-rss-MiB and manager-rss-per-cluster-MiB: the manager's resident memory with the
//     management cluster alone, and what each of fleetSize workload clusters adds;
//   - idle-req-per-s-per-cluster and idle-writes: with the fleet at rest, the manager's requests
//     to the busiest workload cluster's API server per second, and its writes to all of them,
//     over idleWindow (from the manager's rest_client_requests_total metric); measured on the
//     fleet alone, and again with packages and addons installed (-with-addons). Its floor is
//     Cluster API's ClusterCache health probe, a GET every 10 s per workload cluster (0.1/s);
//   - the rows of benchmarkPackagesAndAddons, on the fleet, then those of benchmarkResync (the
//     manager restarted: what its resync of all of that writes, pulls and releases).
func BenchmarkManagementCluster(b *testing.B) {
	for range b.N {
		runManagementBenchmark(b)
	}
}

func runManagementBenchmark(b *testing.B) {
	ctx := b.Context()
	c, home, out := newBenchClient(b)

	mgmtSpec := writeSpec(b, out, spec.GenerateOptions{Name: "mgmt", Provider: spec.ProviderLocal, Management: true, Workers: 2})
	// Deleted also when the create fails half-way: its processes outlive the benchmark otherwise.
	defer func() {
		if err := c.DeleteManagementCluster(context.Background(), client.DeleteManagementClusterOptions{Name: "mgmt", OutDir: out, Force: true}); err != nil {
			b.Error(err)
		}
	}()
	start := time.Now()
	if err := c.CreateManagementCluster(ctx, client.CreateManagementClusterOptions{File: mgmtSpec, OutDir: out}); err != nil {
		b.Fatal(err)
	}
	createSeconds := time.Since(start).Seconds()
	b.ReportMetric(createSeconds, "create-s")

	mgmtKubeconfig := client.UserKubeconfigPath(out, "mgmt")
	kc, err := client.KubeClient(mgmtKubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(10 * time.Second) // let the manager settle before measuring memory
	rssOne := managerRSS(b, home)
	b.ReportMetric(rssOne, "manager-rss-MiB")

	var names []string
	defer func() { deleteClusters(b, kc, names) }()
	// Deferred last, so it runs first: the log as the failure left it, before the deletes.
	defer func() {
		if b.Failed() {
			dir := filepath.Join(home, "clusters", "mgmt")
			b.Logf("the end of the manager's log:\n%s", process.InDir(dir).LogTail("manager", 80))
		}
	}()

	// Workload clusters of the management cluster's shape, created as a user would, first: on a
	// management cluster that runs no other workload cluster yet, as a user's first ones are.
	var workloadTimes []float64
	var withWorkers []string
	for i := range 3 {
		name := fmt.Sprintf("wl-%d", i)
		names = append(names, name)
		withWorkers = append(withWorkers, name)
		file := writeSpec(b, out, spec.GenerateOptions{Name: name, Provider: spec.ProviderLocal, Workers: 2})
		start := time.Now()
		if err := c.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: file, Kubeconfig: mgmtKubeconfig, OutDir: out}); err != nil {
			b.Fatal(err)
		}
		workloadTimes = append(workloadTimes, time.Since(start).Seconds())
	}
	slices.Sort(workloadTimes)
	b.ReportMetric(workloadTimes[len(workloadTimes)/2], "workload-create-p50-s")
	b.ReportMetric(createSeconds/workloadTimes[len(workloadTimes)/2], "management-vs-workload-x")

	const sequential = 5
	var times []float64
	for i := range sequential {
		name := fmt.Sprintf("seq-%d", i)
		names = append(names, name)
		d := timeControlPlanes(b, kc, out, []string{name})
		times = append(times, d.Seconds())
	}
	slices.Sort(times)
	b.ReportMetric(times[len(times)/2], "cp-p50-s")

	var batch []string
	for i := range 10 {
		batch = append(batch, fmt.Sprintf("par-%d", i))
	}
	names = append(names, batch...)
	b.ReportMetric(timeControlPlanes(b, kc, out, batch).Seconds(), "cp-10-at-once-s")

	// A fleet of 20 workload clusters, then the manager at rest.
	var rest []string
	for i := len(names); i < fleetSize; i++ {
		rest = append(rest, fmt.Sprintf("fleet-%d", i))
	}
	names = append(names, rest...)
	timeControlPlanes(b, kc, out, rest)
	time.Sleep(10 * time.Second)
	b.ReportMetric((managerRSS(b, home)-rssOne)/float64(len(names)), "manager-rss-per-cluster-MiB")

	// At rest: the fleet as the management cluster keeps it.
	busiest, writes := idleRequests(b, kc, home, names)
	b.ReportMetric(busiest, "idle-req-per-s-per-cluster")
	b.ReportMetric(writes, "idle-writes")

	benchmarkPackagesAndAddons(b, c, kc, mgmtKubeconfig, out, names, withWorkers)

	// At rest again, with packages and addons installed everywhere, once the Deployments the
	// drift row deleted and drift correction restored have rolled out: the addons watch their
	// releases' objects (metadata only) in every workload cluster instead of polling them, so
	// this adds those watches' renewals (every 5-10 minutes each) to the health probe.
	time.Sleep(10 * time.Second)
	busiest, writes = idleRequests(b, kc, home, names)
	b.ReportMetric(busiest, "idle-req-per-s-per-cluster-with-addons")
	b.ReportMetric(writes, "idle-writes-with-addons")

	benchmarkResync(b, c, kc, home, names)
}

// idleRequests watches the manager's requests to the workload clusters names for idleWindow and
// returns the requests per second to the busiest one and the writes to all of them.
func idleRequests(b *testing.B, kc ctrlclient.Client, home string, names []string) (busiest, writes float64) {
	b.Helper()
	before := managerMetrics(b, home).requests
	time.Sleep(idleWindow)
	after := managerMetrics(b, home).requests
	busiest, writes = workloadRequests(b, kc, names, before, after)
	return busiest / idleWindow.Seconds(), writes
}

// fleetSize is how many workload clusters the management benchmark ends with; idleWindow is how
// long it then watches the manager's requests to them.
const (
	fleetSize  = 20
	idleWindow = time.Minute
)

// timeControlPlanes applies one workload Cluster (no workers) per name at once and returns the
// time until every one has a kubeconfig Secret through which /readyz answers.
func timeControlPlanes(b *testing.B, kc ctrlclient.Client, dir string, names []string) time.Duration {
	b.Helper()
	ctx := b.Context()
	var objs [][]ctrlclient.Object
	for _, name := range names {
		s, err := spec.Load(writeSpec(b, dir, spec.GenerateOptions{Name: name, Provider: spec.ProviderLocal, Workers: 0}))
		if err != nil {
			b.Fatal(err)
		}
		s.Cluster.Spec.ManagementCluster.Name = "mgmt"
		objs = append(objs, s.Objects)
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Go(func() {
			for _, obj := range objs[i] {
				if err := kc.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
					errs[i] = err
					return
				}
			}
			errs[i] = waitAPIServer(ctx, kc, name)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// waitAPIServer waits for the <name>-kubeconfig Secret, then for /readyz through it.
func waitAPIServer(ctx context.Context, kc ctrlclient.Client, name string) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := secret.GetFromNamespacedName(ctx, kc, ctrlclient.ObjectKey{Namespace: "default", Name: name}, secret.Kubeconfig)
		if err != nil {
			return false, nil //nolint:nilerr // not created yet
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[secret.KubeconfigDataName])
		if err != nil {
			return false, err
		}
		httpClient, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return false, err
		}
		httpClient.Timeout = 2 * time.Second
		resp, err := httpClient.Get(cfg.Host + "/readyz")
		if err != nil {
			return false, nil //nolint:nilerr // not serving yet
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// deleteClusters deletes workload clusters and waits until they are gone.
func deleteClusters(b *testing.B, kc ctrlclient.Client, names []string) {
	ctx := context.Background()
	for _, name := range names {
		fc := &flotillav1.Cluster{}
		fc.Namespace, fc.Name = "default", name
		if err := kc.Delete(ctx, fc); err != nil && !apierrors.IsNotFound(err) {
			b.Error(err)
		}
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: name}, &flotillav1.Cluster{})
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			b.Errorf("cluster %s not deleted: %v", name, err)
		}
	}
}

// managerRSS returns the resident memory of mgmt's manager process in MiB.
func managerRSS(b *testing.B, home string) float64 {
	b.Helper()
	dir := filepath.Join(home, "clusters", "mgmt")
	pid, ok := process.InDir(dir).Running("manager")
	if !ok {
		b.Fatal("the manager of mgmt does not run")
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kib, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				b.Fatal(err)
			}
			return kib / 1024
		}
	}
	b.Fatal("no VmRSS in /proc/<pid>/status")
	return 0
}

func writeSpec(b *testing.B, dir string, o spec.GenerateOptions) string {
	b.Helper()
	data, err := spec.Generate(o)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, o.Name+".yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// newBenchClient returns a client whose home and output directory are new, running the
// manager from bin/flotilla (flotillaBinary) and waiting up to 5 minutes for what it creates.
func newBenchClient(b *testing.B) (c *client.Client, home, out string) {
	b.Helper()
	home, out = b.TempDir(), b.TempDir()
	c, err := client.New(home, binaries.DefaultRoot(), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	c.Executable = flotillaBinary(b)
	c.WaitTimeout = 5 * time.Minute
	return c, home, out
}

// flotillaBinary returns bin/flotilla of this repository, which `make bench` builds first.
func flotillaBinary(b *testing.B) string {
	b.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin := filepath.Join(filepath.Dir(file), "..", "bin", "flotilla")
	if _, err := os.Stat(bin); err != nil {
		b.Fatalf("%s is missing: run `make build` (make bench does)", bin)
	}
	return bin
}
