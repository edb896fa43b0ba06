//go:build chaos

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

// TestChaos is `make chaos`, the fault-injection suite of issue 16. On a management cluster with
// five workload clusters, the embedded registry and the curated catalog, it runs each operation
// (a workload cluster create, an upgrade, a package install, an addon rollout to the five
// clusters) once undisturbed, then FLOTILLA_CHAOS_RUNS times (20) while it kills (SIGKILL) at
// random moments, once each per run, the manager, the workload kube-apiserver and etcd the
// operation works on, and the registry; a run that ended before one of its kills is followed by
// more runs, until each target was killed FLOTILLA_CHAOS_RUNS times. Every disturbed run must converge without a user action
// (the command succeeds, the end state comes), reach the same end state as the undisturbed run,
// create no duplicate Helm revision and no duplicate Machine, and leave no process that the
// supervisor does not know. FLOTILLA_CHAOS_OPS (create,upgrade,package,addon) picks operations;
// FLOTILLA_CHAOS_SEED repeats a run's kill moments.
func TestChaos(t *testing.T) {
	g := NewWithT(t)
	runs := envInt(t, "FLOTILLA_CHAOS_RUNS", 20)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FLOTILLA_CHAOS_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		g.Expect(err).NotTo(HaveOccurred(), "FLOTILLA_CHAOS_SEED")
	}
	t.Logf("seed %d (FLOTILLA_CHAOS_SEED repeats it), %d disturbed runs per operation, load %s", seed, runs, loadAverage())

	ch := newChaos(t, rand.New(rand.NewPCG(seed, seed>>1)))
	selected := strings.Split(os.Getenv("FLOTILLA_CHAOS_OPS"), ",")
	var results []opResult
	for _, op := range ch.operations() {
		if selected[0] != "" && !slices.Contains(selected, op.name) {
			continue
		}
		t.Run(op.name, func(t *testing.T) {
			results = append(results, ch.runOperation(t, op, runs))
		})
	}
	t.Logf("load at the end %s", loadAverage())
	fmt.Print(ch.report(results))
	ch.teardown(t)
}

// killTargets are what a disturbed run kills, each once.
var killTargets = []string{"manager", "kube-apiserver", "etcd", "registry"}

// chaos is the fleet the suite disturbs.
type chaos struct {
	f        *fleet
	c        *client.Client
	out      string
	rng      *rand.Rand
	registry string
	// published is the curated catalog in the registry.
	published client.PublishResult
	// addonClusters get the addon; the first has the package controller. addonClustersUp says
	// they were created.
	addonClusters   []string
	addonClustersUp bool
	// expected is the shortest time a run of each operation took: kills fall within it.
	expected map[string]time.Duration
}

// operation is one kind of operation the suite runs again and again.
type operation struct {
	name string
	// setUp readies the operation once, before its first run.
	setUp func(ctx context.Context) error
	// prepare readies run i, undisturbed (the cluster an upgrade upgrades).
	prepare func(ctx context.Context, i int) error
	// do is the operation, as the CLI runs it; it must succeed.
	do func(ctx context.Context, i int) error
	// cluster is the workload cluster whose kube-apiserver and etcd run i kills.
	cluster func(i int) string
	// state is the state of run i, with names that differ between runs left out, and whether it
	// is complete: what the operation asked for is there (Ready, available, running).
	state func(ctx context.Context, i int) (state string, complete bool, err error)
	// revisions lists the Helm revisions or the Machines of run i that exist now; the suite
	// looks at them all along the run, and counts every one it saw, to find duplicates.
	revisions func(ctx context.Context, i int) ([]string, error)
	// cleanup undoes run i, undisturbed.
	cleanup func(ctx context.Context, i int) error
}

// runResult is one run of an operation.
type runResult struct {
	took      time.Duration
	kills     map[string]int
	err       error
	state     string
	revisions int
	leaks     []string
}

// opResult sums up the runs of an operation.
type opResult struct {
	name                                 string
	baseline                             runResult
	runs                                 []runResult
	kills                                map[string]int
	notConverged, duplicates, leaks, off int
}

func newChaos(t *testing.T, rng *rand.Rand) *chaos {
	g := NewWithT(t)
	ctx := t.Context()
	f := newFleet(t)
	ch := &chaos{f: f, out: t.TempDir(), rng: rng, expected: map[string]time.Duration{}}
	var progress syncBuffer
	ch.c = newClient(t, f.home, &bytes.Buffer{})
	ch.c.Out = &progress

	ch.registry = freeAddress(t)
	_, err := ch.c.EnsureRegistry(ctx, client.RegistryOptions{Listen: ch.registry})
	g.Expect(err).NotTo(HaveOccurred())
	ch.published, err = ch.c.Publish(ctx, client.PublishOptions{Registry: ch.registry, Connection: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).NotTo(HaveOccurred())
	for i := 1; i <= 5; i++ {
		ch.addonClusters = append(ch.addonClusters, fmt.Sprintf("ca%d", i))
	}
	return ch
}

// setUpAddonClusters creates, once, the five clusters the package and addon operations work on,
// the first with a package controller.
func (ch *chaos) setUpAddonClusters(ctx context.Context) error {
	if ch.addonClustersUp {
		return nil
	}
	for _, name := range ch.addonClusters {
		if err := ch.createCluster(ctx, name, "1.36", 1); err != nil {
			return err
		}
	}
	publicKey, err := os.ReadFile(ch.published.PublicKey)
	if err != nil {
		return err
	}
	_, err = ch.c.InstallPackageController(ctx, ch.f.kubeconfig, client.PackageControllerOptions{
		Cluster: ch.addonClusters[0], Registry: ch.registry, Repository: ch.published.Repository, PublicKey: publicKey, PlainHTTP: ptr.To(true),
	})
	ch.addonClustersUp = err == nil
	return err
}

// createCluster creates workload cluster name at a Kubernetes minor with workers.
func (ch *chaos) createCluster(ctx context.Context, name, minor string, workers int32) error {
	file := filepath.Join(ch.out, name+".yaml")
	data, err := spec.Generate(spec.GenerateOptions{Name: name, Provider: spec.ProviderLocal, KubernetesVersion: minor, Workers: workers})
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return err
	}
	return ch.c.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: file, Kubeconfig: ch.f.kubeconfig, OutDir: ch.out})
}

// deleteCluster deletes workload cluster name.
func (ch *chaos) deleteCluster(ctx context.Context, name string) error {
	return ch.c.DeleteWorkloadCluster(ctx, client.DeleteWorkloadClusterOptions{Name: name, Namespace: "default", Kubeconfig: ch.f.kubeconfig, OutDir: ch.out})
}

// runOperation runs op undisturbed, then runs times with kills, and checks every run.
func (ch *chaos) runOperation(t *testing.T, op operation, runs int) opResult {
	res := opResult{name: op.name, kills: map[string]int{}}
	if op.setUp != nil {
		if err := op.setUp(t.Context()); err != nil {
			t.Fatalf("setting up %s: %v", op.name, err)
		}
	}
	res.baseline = ch.runOnce(t, op, 0, false)
	if res.baseline.err != nil {
		t.Fatalf("the undisturbed run of %s failed: %v", op.name, res.baseline.err)
	}
	t.Logf("%s undisturbed: %s; end state:\n%s", op.name, res.baseline.took.Round(100*time.Millisecond), res.baseline.state)
	// A kill meant for a moment after a run ended does not happen: runs go on, up to three times
	// as many, until each target was killed runs times.
	for i := 1; i <= 3*runs && (i <= runs || fewestKills(res.kills) < runs); i++ {
		r := ch.runOnce(t, op, i, true)
		res.runs = append(res.runs, r)
		for target, n := range r.kills {
			res.kills[target] += n
		}
		switch {
		case r.err != nil:
			res.notConverged++
			t.Errorf("%s run %d did not converge: %v", op.name, i, r.err)
		case r.state != res.baseline.state:
			res.off++
			t.Errorf("%s run %d ended elsewhere than the undisturbed run:\n%s\nwant:\n%s", op.name, i, r.state, res.baseline.state)
		}
		if r.revisions > res.baseline.revisions {
			res.duplicates++
			t.Errorf("%s run %d created %d Helm revisions or Machines, the undisturbed run %d", op.name, i, r.revisions, res.baseline.revisions)
		}
		if len(r.leaks) > 0 {
			res.leaks++
			t.Errorf("%s run %d leaked processes: %v", op.name, i, r.leaks)
		}
		t.Logf("%s run %d: %s, kills %v, load %s", op.name, i, r.took.Round(100*time.Millisecond), r.kills, loadAverage())
	}
	return res
}

// runOnce prepares run i, runs it (killing each target once at a random moment when disturbed),
// waits for its end state, checks it, and cleans up.
func (ch *chaos) runOnce(t *testing.T, op operation, i int, disturbed bool) runResult {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	r := runResult{kills: map[string]int{}}
	if op.prepare != nil {
		if r.err = op.prepare(ctx, i); r.err != nil {
			r.err = fmt.Errorf("preparing: %w", r.err)
			return r
		}
	}
	done := make(chan struct{})
	var kills sync.WaitGroup
	var mu sync.Mutex
	if disturbed {
		// The moments fall in the first 90% of the shortest run so far, so that most land during
		// the run (a kill makes it longer).
		window := max(ch.expected[op.name]*9/10, 50*time.Millisecond)
		for _, target := range killTargets {
			at := time.Duration(ch.rng.Int64N(int64(window)))
			kills.Go(func() {
				if ch.kill(ctx, done, at, target, op.cluster(i)) {
					mu.Lock()
					r.kills[target]++
					mu.Unlock()
				}
			})
		}
	}
	seen := map[string]bool{}
	observed := make(chan struct{})
	var observer sync.WaitGroup
	observe := func() {
		ids, err := op.revisions(ctx, i)
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, id := range ids {
			seen[id] = true
		}
	}
	observer.Go(func() {
		for {
			observe()
			select {
			case <-observed:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
	start := time.Now()
	r.err = op.do(ctx, i)
	r.took = time.Since(start)
	close(done)
	kills.Wait()
	if r.err == nil {
		r.state, r.err = ch.settle(ctx, op, i)
	}
	close(observed)
	observer.Wait()
	observe()
	r.revisions = len(seen)
	if err := op.cleanup(ctx, i); err != nil && r.err == nil {
		r.err = fmt.Errorf("cleaning up: %w", err)
	}
	r.leaks = ch.leaks()
	if expected, ok := ch.expected[op.name]; r.err == nil && (!ok || r.took < expected) {
		ch.expected[op.name] = r.took
	}
	return r
}

// settle waits up to settleTimeout for the state of run i to be complete, and returns it.
func (ch *chaos) settle(ctx context.Context, op operation, i int) (string, error) {
	deadline := time.Now().Add(settleTimeout)
	var last string
	for {
		state, complete, err := op.state(ctx, i)
		if err == nil && complete {
			return state, nil
		}
		if err != nil {
			state = err.Error()
		}
		last = state
		if time.Now().After(deadline) {
			return last, fmt.Errorf("not complete %s after the command returned; last:\n%s", settleTimeout, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// settleTimeout bounds how long a run's end state may take to be complete after its command
// returned.
const settleTimeout = 3 * time.Minute

// kill kills target at after the start of a run, unless the run is done by then: the manager,
// the registry, or the kube-apiserver or etcd of cluster (waiting for them to exist, as a
// cluster being created gets them later). It reports whether it killed.
func (ch *chaos) kill(ctx context.Context, done <-chan struct{}, after time.Duration, target, cluster string) bool {
	select {
	case <-done:
		return false
	case <-ctx.Done():
		return false
	case <-time.After(after):
	}
	dir := filepath.Join(ch.f.home, "clusters", cluster)
	keeper := process.InDir(dir)
	name := target
	switch target {
	case "manager":
		dir = filepath.Join(ch.f.home, "clusters", "mgmt")
		keeper = process.InDir(dir)
	case "registry":
		keeper = process.InDir(ch.c.RegistryHome())
	}
	for {
		if pid, running := keeper.Running(name); running {
			return syscall.Kill(pid, syscall.SIGKILL) == nil
		}
		select {
		case <-done:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leaks returns the processes whose command line names the home and that no record of the home
// describes, nor the supervisor: a duplicate, or a process of a deleted cluster.
func (ch *chaos) leaks() []string {
	known := map[int]bool{}
	if pid, ok := supervisor.PID(ch.f.home); ok {
		known[pid] = true
	}
	for _, dir := range append(mustGlob(controlplane.ClusterDir(ch.f.home, "*")), ch.c.RegistryHome()) {
		keeper := process.InDir(dir)
		names, _ := keeper.Names()
		for _, name := range names {
			if pid, ok := keeper.Running(name); ok {
				known[pid] = true
			}
		}
	}
	var leaked []string
	for _, path := range mustGlob("/proc/[0-9]*/cmdline") {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil || known[pid] || !process.Alive(pid) {
			continue
		}
		argv, err := process.Cmdline(pid)
		if err == nil && strings.Contains(strings.Join(argv, " "), ch.f.home) {
			leaked = append(leaked, fmt.Sprintf("pid %d: %s", pid, strings.Join(argv, " ")))
		}
	}
	return leaked
}

// teardown deletes what the suite created and checks that no process of the home is left.
func (ch *chaos) teardown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	if ch.addonClustersUp {
		for _, name := range ch.addonClusters {
			g.Expect(ch.deleteCluster(ctx, name)).To(Succeed())
		}
	}
	g.Expect(ch.c.StopRegistry(ctx)).To(Succeed())
	g.Expect(ch.f.c.DeleteManagementCluster(ctx, client.DeleteManagementClusterOptions{Name: "mgmt", OutDir: ch.f.out})).To(Succeed())
	g.Eventually(func() bool { return supervisor.Running(ch.f.home) }).WithTimeout(30 * time.Second).Should(BeFalse())
	g.Expect(ch.leaks()).To(BeEmpty())
}

// report renders the results as a table.
func (ch *chaos) report(results []opResult) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "OPERATION\tRUNS\tKILLS (manager/apiserver/etcd/registry)\tNOT CONVERGED\tOTHER END STATE\tDUPLICATES\tLEAKS\tUNDISTURBED\tMEDIAN\tMAX")
	for _, r := range results {
		var took []time.Duration
		for _, run := range r.runs {
			took = append(took, run.took)
		}
		slices.Sort(took)
		median, longest := time.Duration(0), time.Duration(0)
		if len(took) > 0 {
			median, longest = took[len(took)/2], took[len(took)-1]
		}
		total := 0
		for _, n := range r.kills {
			total += n
		}
		fmt.Fprintf(w, "%s\t%d\t%d (%d/%d/%d/%d)\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", r.name, len(r.runs), total,
			r.kills["manager"], r.kills["kube-apiserver"], r.kills["etcd"], r.kills["registry"],
			r.notConverged, r.off, r.duplicates, r.leaks,
			r.baseline.took.Round(100*time.Millisecond), median.Round(100*time.Millisecond), longest.Round(100*time.Millisecond))
	}
	_ = w.Flush()
	return b.String()
}

// fewestKills is the number of kills of the target killed least often.
func fewestKills(kills map[string]int) int {
	fewest := -1
	for _, target := range killTargets {
		if fewest < 0 || kills[target] < fewest {
			fewest = kills[target]
		}
	}
	return fewest
}

func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: a number of runs", name, v)
	}
	return n
}

func mustGlob(pattern string) []string {
	paths, _ := filepath.Glob(pattern)
	return paths
}

// loadAverage is the machine's load, from /proc/loadavg.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
