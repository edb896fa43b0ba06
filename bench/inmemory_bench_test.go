package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// Shape of the in-memory benchmark: issue 12's targets.
const (
	// inMemorySequential clusters are created one after the other for the p50.
	inMemorySequential = 5
	// inMemoryFleet clusters are created at once.
	inMemoryFleet = 50
)

// BenchmarkInMemory measures clusters of Cluster API's in-memory provider (1 control plane
// machine, 1 worker, from the ClusterClass `flotilla generate clusterconfig --provider inmemory`
// writes), with the manager's Cluster API core, topology and kubeadm, Cluster and inmemory
// components on a test API server; the provider process is this benchmark binary (TestMain):
//   - inmemory-ready-p50-s: the median, over inMemorySequential clusters created one after the
//     other, of the time from the Flotilla Cluster applied (what `flotilla create cluster`
//     applies after its checks) until it is Ready. A first cluster, not counted, starts the
//     provider process, as the first in-memory cluster of a management cluster does;
//   - inmemory-50-ready-s: from inMemoryFleet Clusters applied at once until every one is Ready;
//   - inmemory-load1: the machine's 1-minute load average when the fleet is Ready, since the
//     machine may be shared.
func BenchmarkInMemory(b *testing.B) {
	for range b.N {
		runInMemoryBenchmark(b)
	}
}

func runInMemoryBenchmark(b *testing.B) {
	ctx := b.Context()
	env, err := testenv.Start(testenv.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			b.Error(err)
		}
	}()
	executable, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	stop := startManager(b, env, []string{"capi", "kubeadm", "cluster", "inmemory"}, executable)
	defer stop()

	const ns = "default"
	objs, err := inMemoryObjects(ns)
	if err != nil {
		b.Fatal(err)
	}
	// The ClusterClass and its templates, as the first `create cluster` applies them.
	for _, obj := range objs[:len(objs)-1] {
		if err := apply(ctx, env.Client, obj); err != nil {
			b.Fatal(err)
		}
	}
	cluster := objs[len(objs)-1].(*flotillav1.Cluster)
	create := func(name string) (time.Time, error) {
		c := cluster.DeepCopy()
		c.Name = name
		return time.Now(), apply(ctx, env.Client, c)
	}

	if _, err := create("warm"); err != nil {
		b.Fatal(err)
	}
	if err := waitClustersReady(ctx, env, ns, []string{"warm"}, nil); err != nil {
		b.Fatal(err)
	}
	var times []time.Duration
	for i := range inMemorySequential {
		name := fmt.Sprintf("seq-%d", i)
		start, err := create(name)
		if err != nil {
			b.Fatal(err)
		}
		if err := waitClustersReady(ctx, env, ns, []string{name}, nil); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.Logf("in-memory clusters Ready after (s, sorted): %v", times)
	b.ReportMetric(times[len(times)/2].Seconds(), "inmemory-ready-p50-s")

	names := make([]string, inMemoryFleet)
	var wg sync.WaitGroup
	errs := make([]error, inMemoryFleet)
	start := time.Now()
	for i := range names {
		names[i] = fmt.Sprintf("fleet-%02d", i)
		wg.Go(func() { _, errs[i] = create(names[i]) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	var first time.Duration
	if err := waitClustersReady(ctx, env, ns, names, func(string) {
		if first == 0 {
			first = time.Since(start)
		}
	}); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d in-memory clusters applied at once: the first Ready after %s, the last after %s", inMemoryFleet, first, time.Since(start))
	b.ReportMetric(time.Since(start).Seconds(), "inmemory-50-ready-s")
	if load, err := loadAverage(); err == nil {
		b.ReportMetric(load, "inmemory-load1")
	}
}

// inMemoryObjects are the objects of an in-memory cluster's generated spec, in namespace ns: the
// templates, the ClusterClass, and the Cluster last.
func inMemoryObjects(ns string) ([]ctrlclient.Object, error) {
	data, err := spec.Generate(spec.GenerateOptions{Name: "bench", Provider: spec.ProviderInMemory, Workers: 1})
	if err != nil {
		return nil, err
	}
	s, err := spec.Parse("bench.yaml", data)
	if err != nil {
		return nil, err
	}
	for _, obj := range s.Objects {
		obj.SetNamespace(ns)
	}
	return s.Objects, nil
}

// apply server-side applies obj.
func apply(ctx context.Context, c ctrlclient.Client, obj ctrlclient.Object) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	if err := c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner("bench"), ctrlclient.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// waitClustersReady waits until every Cluster of names in ns is Ready, calling ready (when not
// nil) with each name as it becomes Ready. It watches the Clusters rather than listing them over
// and over, which would load the API server the benchmark measures.
func waitClustersReady(ctx context.Context, env *testenv.Environment, ns string, names []string, ready func(string)) error {
	pending := map[string]bool{}
	for _, n := range names {
		pending[n] = true
	}
	var last string
	observe := func(c *flotillav1.Cluster) {
		if !pending[c.Name] {
			return
		}
		cond := meta.FindStatusCondition(c.Status.Conditions, flotillav1.ReadyCondition)
		if cond != nil && cond.Status == "True" && cond.ObservedGeneration == c.Generation {
			delete(pending, c.Name)
			if ready != nil {
				ready(c.Name)
			}
		} else if cond != nil {
			last = fmt.Sprintf("%s: %s: %s", c.Name, cond.Reason, cond.Message)
		}
	}
	wc, err := ctrlclient.NewWithWatch(env.Config, ctrlclient.Options{Scheme: env.Scheme})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	for len(pending) > 0 {
		list := &flotillav1.ClusterList{}
		if err := wc.List(ctx, list, ctrlclient.InNamespace(ns)); err != nil {
			return fmt.Errorf("waiting for %d Clusters to be Ready (last: %s): %w", len(pending), last, err)
		}
		for i := range list.Items {
			observe(&list.Items[i])
		}
		w, err := wc.Watch(ctx, &flotillav1.ClusterList{}, ctrlclient.InNamespace(ns), &ctrlclient.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			return fmt.Errorf("waiting for %d Clusters to be Ready (last: %s): %w", len(pending), last, err)
		}
		for event := range w.ResultChan() {
			if c, ok := event.Object.(*flotillav1.Cluster); ok {
				observe(c)
			}
			if len(pending) == 0 {
				break
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("waiting for %d Clusters to be Ready (last: %s): %w", len(pending), last, err)
		}
	}
	return nil
}

// loadAverage is the machine's 1-minute load average.
func loadAverage() (float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	var load float64
	_, err = fmt.Sscanf(strings.Fields(string(data))[0], "%g", &load)
	return load, err
}
