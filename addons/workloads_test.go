package addons_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/addons/values"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// Workload clusters are API servers of their own (etcd and kube-apiserver, no controllers),
// started when a test first needs them and shared by the tests: each test installs into release
// namespaces named after its own namespace. Their releases go through pkg/helm's engine.
var workloads struct {
	mu   sync.Mutex
	envs []*testenv.Environment
	// cache is the real engine's chart cache.
	cache string
	// requests counts the requests sent to the workload API servers.
	requests atomic.Int64
	// sent records the requests sent to each workload API server (by host), as "METHOD URI".
	sent sync.Map // string → *requestLog
	// dedicated are the API servers of useDedicatedWorkloadCluster.
	dedicated []*testenv.Environment
}

// requestLog is what requestCounter records of the requests to one host.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

// Like the manager's cluster cache, which hands Helm configs with these limits.
const (
	workloadQPS     = 20
	workloadBurst   = 30
	workloadTimeout = 10 * time.Second
)

// useWorkloadClusters makes the Clusters ns/names (created by the test or not yet) reach one
// workload API server each, through the real engine, and returns those API servers. The first
// call starts the real engine; API servers are started, in parallel, as more are needed.
func useWorkloadClusters(tb testing.TB, ns string, names ...string) []*testenv.Environment {
	tb.Helper()
	workloads.mu.Lock()
	defer workloads.mu.Unlock()
	if workloads.cache == "" {
		cache, err := os.MkdirTemp("", "flotilla-addons-charts-")
		if err != nil {
			tb.Fatal(err)
		}
		workloads.cache = cache
		router.mu.Lock()
		router.real = &helm.Engine{ChartCache: cache, Renderer: values.ChartRenderer{}} // as the manager's
		router.hosts = map[string]bool{}
		router.mu.Unlock()
	}
	if missing := len(names) - len(workloads.envs); missing > 0 {
		started := make([]*testenv.Environment, missing)
		errs := make([]error, missing)
		var wg sync.WaitGroup
		for i := range missing {
			wg.Go(func() { started[i], errs[i] = testenv.Start(testenv.Options{SkipCRDs: true}) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				tb.Fatal(err)
			}
			workloads.envs = append(workloads.envs, started[i])
		}
	}
	envs := workloads.envs[:len(names)]
	for i, name := range names {
		registerWorkloadCluster(ns, name, envs[i])
	}
	return envs
}

// useDedicatedWorkloadCluster is useWorkloadClusters with a workload API server that no other
// test uses, for a test that counts the requests it receives.
func useDedicatedWorkloadCluster(tb testing.TB, ns, name string) *testenv.Environment {
	tb.Helper()
	useWorkloadClusters(tb, ns) // the real engine
	e, err := testenv.Start(testenv.Options{SkipCRDs: true})
	if err != nil {
		tb.Fatal(err)
	}
	workloads.mu.Lock()
	workloads.dedicated = append(workloads.dedicated, e)
	workloads.mu.Unlock()
	registerWorkloadCluster(ns, name, e)
	return e
}

// registerWorkloadCluster makes the Cluster ns/name reach the API server of e through the real
// engine, with a config that counts and records the requests.
func registerWorkloadCluster(ns, name string, e *testenv.Environment) {
	cfg := rest.CopyConfig(e.Config)
	cfg.QPS, cfg.Burst, cfg.Timeout = workloadQPS, workloadBurst, workloadTimeout
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return requestCounter{rt} })
	clusters.mu.Lock()
	router.mu.Lock()
	clusters.configs[ctrlclient.ObjectKey{Namespace: ns, Name: name}] = cfg
	router.hosts[cfg.Host] = true
	router.mu.Unlock()
	clusters.mu.Unlock()
}

// requestsSent returns the requests sent to the API server of e so far, as "METHOD URI".
func requestsSent(e *testenv.Environment) []string {
	host := e.Config.Host
	if u, err := url.Parse(host); err == nil && u.Host != "" {
		host = u.Host
	}
	v, ok := workloads.sent.Load(host)
	if !ok {
		return nil
	}
	l := v.(*requestLog)
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

// requestCounter counts the requests to workload clusters in workloads.requests and records
// them in workloads.sent.
type requestCounter struct{ next http.RoundTripper }

func (c requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	workloads.requests.Add(1)
	v, _ := workloads.sent.LoadOrStore(req.URL.Host, &requestLog{})
	l := v.(*requestLog)
	l.mu.Lock()
	l.reqs = append(l.reqs, req.Method+" "+req.URL.RequestURI())
	l.mu.Unlock()
	return c.next.RoundTrip(req)
}

// stopWorkloads stops the workload API servers the tests started.
func stopWorkloads() {
	workloads.mu.Lock()
	defer workloads.mu.Unlock()
	for _, e := range append(workloads.envs, workloads.dedicated...) {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "workload cluster: %v\n", err)
		}
	}
	if workloads.cache != "" {
		_ = os.RemoveAll(workloads.cache)
	}
}

// runDeploymentController stands in for kube-controller-manager and kubelets, which the
// workload API servers do not run: until the test ends it reports every Deployment in
// namespace of each cluster in envs, except those of the clusters in broken, as rolled out and
// available, as the Deployment controller would once its Pods run.
func runDeploymentController(tb testing.TB, namespace string, envs []*testenv.Environment, broken ...*testenv.Environment) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	tb.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for _, e := range envs {
		if slices.Contains(broken, e) {
			continue
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				list := &appsv1.DeploymentList{}
				if err := e.Client.List(ctx, list, ctrlclient.InNamespace(namespace)); err == nil {
					for i := range list.Items {
						markAvailable(ctx, e.Client, &list.Items[i])
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
	}
}

// markAvailable reports a Deployment's current spec as rolled out and available.
func markAvailable(ctx context.Context, c ctrlclient.Client, d *appsv1.Deployment) {
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	st := &d.Status
	if st.ObservedGeneration == d.Generation && st.UpdatedReplicas == replicas && st.AvailableReplicas == replicas {
		return
	}
	*st = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas}
	_ = c.Status().Update(ctx, d) // a conflict is retried at the next round
}
