package addons_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
)

// fleetSize is the number of workload clusters of the benchmark, as in `make bench`.
const fleetSize = 20

// BenchmarkAProxyAcrossAFleet measures the addons component end to end, in a real manager with
// the real Helm engine, against fleetSize workload API servers (run it alone: go test -run '^$'
// -bench AProxyAcrossAFleet -benchtime 1x ./addons; add -cpuprofile to see where the time goes):
//   - fleet-s: one HelmChartProxy selecting every cluster, until the proxy is Ready (its release
//     Ready in every cluster);
//   - releases-per-s: five proxies applied at once to the same clusters, releases made per second
//     until every one of them is Ready; with the CPU time of the process (the manager, mostly)
//     and the requests to the workload clusters, per release made: measures of the work that do
//     not depend on what else the machine runs.
//
// The proxies are what `make bench` applies: the latest chart of an OCI repository, a values
// template, drift correction (through the watches: no interval needed).
func BenchmarkAProxyAcrossAFleet(b *testing.B) {
	startManager(b)
	registry, stop := charttest.StartRegistry()
	b.Cleanup(stop)
	charttest.Push(b, registry+"/charts", charttest.Hello("0.1.0"))

	for b.Loop() {
		ns := env.NewNamespace(b)
		names := make([]string, fleetSize)
		for i := range names {
			names[i] = fmt.Sprintf("w%02d", i)
		}
		useWorkloadClusters(b, ns, names...)
		for _, name := range names {
			createCluster(NewWithT(b), ns, name, map[string]string{"env": "prod"})
		}

		start := time.Now()
		createFleetProxies(b, ns, registry, "first")
		waitAllReady(b, ns, fleetSize)
		b.ReportMetric(time.Since(start).Seconds(), "fleet-s")

		const proxies = 5
		var more []string
		for i := range proxies {
			more = append(more, fmt.Sprintf("batch%d", i))
		}
		start, cpu, requests := time.Now(), processCPU(b), workloads.requests.Load()
		createFleetProxies(b, ns, registry, more...)
		waitAllReady(b, ns, (proxies+1)*fleetSize)
		releases := float64(proxies * fleetSize)
		b.ReportMetric(releases/time.Since(start).Seconds(), "releases-per-s")
		b.ReportMetric(float64((processCPU(b)-cpu).Milliseconds())/releases, "cpu-ms-per-release")
		b.ReportMetric(float64(workloads.requests.Load()-requests)/releases, "workload-requests-per-release")
	}
}

// createFleetProxies creates HelmChartProxies named names selecting every cluster of ns, each
// installing the hello chart into a namespace of its own.
func createFleetProxies(b *testing.B, ns, registry string, names ...string) {
	b.Helper()
	for _, name := range names {
		p := proxy(ns, name)
		p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Version, p.Spec.Namespace = "oci://"+registry+"/charts", "hello", "", name+"-"+ns
		p.Spec.Registry = &addonsv1.RegistryOptions{PlainHTTP: true}
		p.Spec.ValuesTemplate = "greeting: Hello {{ .Cluster.metadata.name }}\n"
		p.Spec.DriftCorrection = &addonsv1.DriftCorrection{Mode: addonsv1.DriftCorrectionEnabled}
		if err := env.Client.Create(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// waitAllReady waits until ns holds n HelmReleaseProxies, all Ready for their generation, and
// every HelmChartProxy is Ready.
func waitAllReady(b *testing.B, ns string, n int) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if ready, why := allReady(ns, n); ready {
			return
		} else if time.Now().Add(50 * time.Millisecond).After(deadline) {
			b.Fatal(why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func allReady(ns string, n int) (bool, string) {
	ctx := context.Background()
	hrps := &addonsv1.HelmReleaseProxyList{}
	if err := env.Client.List(ctx, hrps, ctrlclient.InNamespace(ns)); err != nil {
		return false, err.Error()
	}
	ready := 0
	for _, hrp := range hrps.Items {
		if c := meta.FindStatusCondition(hrp.Status.Conditions, addonsv1.ReadyCondition); c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == hrp.Generation {
			ready++
		}
	}
	if ready < n {
		return false, fmt.Sprintf("%d of %d HelmReleaseProxies Ready", ready, n)
	}

	hcps := &addonsv1.HelmChartProxyList{}
	if err := env.Client.List(ctx, hcps, ctrlclient.InNamespace(ns)); err != nil {
		return false, err.Error()
	}
	for _, p := range hcps.Items {
		if c := meta.FindStatusCondition(p.Status.Conditions, addonsv1.ReadyCondition); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != p.Generation {
			return false, fmt.Sprintf("HelmChartProxy %s is not Ready", p.Name)
		}
	}
	return true, ""
}

// processCPU is the CPU time the process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
