package addons_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
		router.real = &helm.Engine{ChartCache: cache}
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
	clusters.mu.Lock()
	router.mu.Lock()
	for i, name := range names {
		cfg := rest.CopyConfig(envs[i].Config)
		cfg.QPS, cfg.Burst, cfg.Timeout = workloadQPS, workloadBurst, workloadTimeout
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return requestCounter{rt} })
		clusters.configs[client.ObjectKey{Namespace: ns, Name: name}] = cfg
		router.hosts[cfg.Host] = true
	}
	router.mu.Unlock()
	clusters.mu.Unlock()
	return envs
}

// requestCounter counts the requests to workload clusters in workloads.requests.
type requestCounter struct{ next http.RoundTripper }

func (c requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	workloads.requests.Add(1)
	return c.next.RoundTrip(req)
}

// stopWorkloads stops the workload API servers the tests started.
func stopWorkloads() {
	workloads.mu.Lock()
	defer workloads.mu.Unlock()
	for _, e := range workloads.envs {
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
				if err := e.Client.List(ctx, list, client.InNamespace(namespace)); err == nil {
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
func markAvailable(ctx context.Context, c client.Client, d *appsv1.Deployment) {
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
