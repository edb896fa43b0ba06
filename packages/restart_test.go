package packages_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// requestLog records the requests made through the REST configs it wraps: how many read, and
// each one that writes (every method but GET and HEAD; watches are GETs).
type requestLog struct {
	mu     sync.Mutex
	reads  int
	writes []string
}

// wrap returns a copy of cfg whose requests l records.
func (l *requestLog) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			l.mu.Lock()
			if req.Method == http.MethodGet || req.Method == http.MethodHead {
				l.reads++
			} else {
				l.writes = append(l.writes, req.Method+" "+req.URL.Path)
			}
			l.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
	return cfg
}

func (l *requestLog) counts() (reads int, writes []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reads, slices.Clone(l.writes)
}

func (l *requestLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads, l.writes = 0, nil
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// stateLog records the states each Package of a namespace goes through, as `kubectl get
// packages -w` shows them.
type stateLog struct {
	mu     sync.Mutex
	states map[string][]packagesv1.PackageState
}

// watchStates watches the Packages of namespace ns until the test ends.
func watchStates(t *testing.T, ns string) *stateLog {
	t.Helper()
	wc, err := ctrlclient.NewWithWatch(mgmt.Config, ctrlclient.Options{Scheme: mgmt.Scheme})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := wc.Watch(ctx, &packagesv1.PackageList{}, ctrlclient.InNamespace(ns))
	must(t, err)
	l := &stateLog{states: map[string][]packagesv1.PackageState{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*packagesv1.Package)
			if !ok || ev.Type == watch.Deleted || p.Status.State == "" {
				continue
			}
			l.mu.Lock()
			if s := l.states[p.Name]; len(s) == 0 || s[len(s)-1] != p.Status.State {
				l.states[p.Name] = append(s, p.Status.State)
			}
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		cancel()
		<-done
	})
	return l
}

func (l *stateLog) of(name string) []packagesv1.PackageState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.states[name])
}

// releaseSecrets lists Helm's release records (one Secret per revision) in namespace ns of the
// workload cluster.
func releaseSecrets(g Gomega, ns string) []string {
	list := &corev1.SecretList{}
	g.Expect(workload.Client.List(context.Background(), list, ctrlclient.InNamespace(ns), ctrlclient.MatchingLabels{"owner": "helm"})).To(Succeed())
	names := make([]string, 0, len(list.Items))
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names
}

// TestARestartedControllerResyncsWithoutWritingAnything installs Packages, then restarts the
// packages component as a new process would (a new manager on the same API server, a new Helm
// engine on the same chart cache) and counts what the resync does: no request that writes to the
// workload cluster, no chart pulled or looked up, no new Helm revision, no write to the Packages
// (status included) or their Events. States are read from a watch, as `kubectl get packages -w`
// shows them.
func TestARestartedControllerResyncsWithoutWritingAnything(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const target, repo = "restart", "restart/bundles"
	clusterNS := packagesv1.ClusterNamespace("w-restart")
	hello1 := helloChart("hello", "0.1.0").push(t, "")
	hello2 := helloChart("hello", "0.2.0").push(t, "")
	stackChart := helloChart("stack", "0.1.0").push(t, "")
	stackChart.Dependencies = []string{"hello"}
	// Bundle names are shared by every source: a build of its own.
	pushBundle(t, repo, "1.36", 80, signingKey, pkg("hello", hello2, hello1), pkg("stack", stackChart))
	g.Expect(mgmt.Client.Create(ctx, &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: "w-restart", Namespace: packagesv1.PackagesNamespace},
		Spec:       packagesv1.PackageBundleControllerSpec{Source: &packagesv1.BundleSource{Registry: regHost, Repository: repo}},
	})).To(Succeed())

	// The controllers reach the workload cluster as a user of their own, through a config that
	// logs every request: Helm's clients are cached per identity, so no other config stands in.
	user, err := workload.AddUser("packages-restart", "system:masters")
	g.Expect(err).NotTo(HaveOccurred())
	workloadRequests := &requestLog{}
	c := newCluster(t, "w-restart", "1.36")
	configs.set(ctrlclient.ObjectKeyFromObject(c), workloadRequests.wrap(user.Config))
	t.Cleanup(func() { deleteCluster(t, c) })
	g.Eventually(func(g Gomega) {
		g.Expect(pbcOf(g, "w-restart").Spec.ActiveBundle).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())
	states := watchStates(t, clusterNS)

	hello := newPackage("w-restart", "hello", "hello", "")
	old := newPackage("w-restart", "hello-old", "hello", "")
	old.Spec.PackageVersion = "0.1.0"
	stack := newPackage("w-restart", "stack", "stack", "")
	for _, p := range []*packagesv1.Package{hello, old, stack} {
		p.Spec.TargetNamespace = target
		g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	}
	names := []string{"hello", "hello-old", "stack"}
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			g.Expect(packageOf(g, "w-restart", name).Status.State).To(Equal(packagesv1.PackageInstalled), name)
		}
	}, timeout, interval).Should(Succeed())

	t.Run("a Package is installing while Helm installs it, then installed", func(t *testing.T) {
		g := NewWithT(t)
		for _, name := range names {
			s := states.of(name)
			g.Expect(s).To(ContainElement(packagesv1.PackageInstalling), name)
			g.Expect(s).NotTo(ContainElement(packagesv1.PackageUpgrading), name)
			g.Expect(s[len(s)-1]).To(Equal(packagesv1.PackageInstalled), name)
			g.Expect(slices.Index(s, packagesv1.PackageInstalling)).To(BeNumerically("<", slices.Index(s, packagesv1.PackageInstalled)), "%s: %v", name, s)
		}
		// The counter sees the controllers' writes.
		_, writes := workloadRequests.counts()
		g.Expect(writes).NotTo(BeEmpty())
	})

	t.Run("a new config is upgrading while Helm upgrades, then installed", func(t *testing.T) {
		g := NewWithT(t)
		setConfig(g, "w-restart", "hello", "greeting: hallo\n")
		g.Eventually(func(g Gomega) {
			p := packageOf(g, "w-restart", "hello")
			g.Expect(p.Status.Revision).To(Equal(2))
			g.Expect(p.Status.State).To(Equal(packagesv1.PackageInstalled))
		}, timeout, interval).Should(Succeed())
		s := states.of("hello")
		g.Expect(s[len(s)-2:]).To(Equal([]packagesv1.PackageState{packagesv1.PackageUpgrading, packagesv1.PackageInstalled}))
		// stack depends on hello: its dependency being upgraded does not make it wait.
		s = states.of("stack")
		g.Expect(s[slices.Index(s, packagesv1.PackageInstalled):]).To(Equal([]packagesv1.PackageState{packagesv1.PackageInstalled}), "%v", s)
	})

	t.Run("a restarted controller resyncs every Package without a write, a pull or a revision", func(t *testing.T) {
		g := NewWithT(t)
		revisions := releaseSecrets(g, target)
		g.Expect(revisions).To(HaveLen(4)) // hello v1, v2; hello-old v1; stack v1
		statusBefore := map[string]packagesv1.PackageStatus{}
		for _, name := range names {
			statusBefore[name] = packageOf(g, "w-restart", name).Status
		}

		g.Expect(stopManager()).To(Succeed())
		workloadRequests.reset()
		mgmtRequests := &requestLog{}
		started := time.Now()
		g.Expect(startManager(testenv.ManagerOptions{Config: mgmtRequests.wrap(mgmt.Config), Restart: true})).To(Succeed())
		// The new engine found every release as it should be (other clusters' Packages resync
		// too, so at least these three).
		g.Eventually(func() int64 { return engine.Stats().Unchanged }, timeout, interval).Should(BeNumerically(">=", len(names)))
		resynced := time.Since(started)
		// And nothing else comes: the resync is over, not merely slow.
		g.Consistently(func() []string {
			_, writes := workloadRequests.counts()
			return writes
		}, 3*time.Second, interval).Should(BeEmpty())

		reads, writes := workloadRequests.counts()
		g.Expect(writes).To(BeEmpty(), "writes to the workload cluster")
		g.Expect(reads).To(BeNumerically(">", 0), "the resync reads the releases")
		stats := engine.Stats()
		g.Expect(stats.ChartPulls).To(BeZero())
		g.Expect(stats.SourceLookups).To(BeZero())
		g.Expect(stats.Installs + stats.Upgrades + stats.Recoveries).To(BeZero())
		g.Expect(releaseSecrets(g, target)).To(Equal(revisions))
		for _, name := range names {
			g.Expect(packageOf(g, "w-restart", name).Status).To(Equal(statusBefore[name]), name)
		}
		_, mgmtWrites := mgmtRequests.counts()
		var ours []string
		for _, w := range mgmtWrites {
			if strings.Contains(w, "/namespaces/"+clusterNS+"/") || strings.HasSuffix(w, "/packagebundlecontrollers/w-restart") ||
				strings.HasSuffix(w, "/packagebundlecontrollers/w-restart/status") {
				ours = append(ours, w)
			}
		}
		g.Expect(ours).To(BeEmpty(), "writes to the cluster's Packages, their Events or its PackageBundleController")
		t.Logf("resync after restart: %d Helm releases unchanged in %s; workload cluster: %d reads, 0 writes; management cluster: %d writes by the whole component (other tests' clusters): %s",
			stats.Unchanged, resynced.Round(time.Millisecond), reads, len(mgmtWrites), strings.Join(mgmtWrites, ", "))
	})

	t.Run("after the restart a change is installed again, and counted", func(t *testing.T) {
		g := NewWithT(t)
		setConfig(g, "w-restart", "hello-old", "greeting: moin\n")
		g.Eventually(func(g Gomega) {
			g.Expect(packageOf(g, "w-restart", "hello-old").Status.Revision).To(Equal(2))
		}, timeout, interval).Should(Succeed())
		_, writes := workloadRequests.counts()
		g.Expect(writes).NotTo(BeEmpty())
		g.Expect(engine.Stats().Upgrades).To(Equal(int64(1)))
		g.Expect(releaseSecrets(g, target)).To(HaveLen(5))
		s := states.of("hello-old")
		g.Expect(s[len(s)-2:]).To(Equal([]packagesv1.PackageState{packagesv1.PackageUpgrading, packagesv1.PackageInstalled}))
	})
}

func setConfig(g Gomega, cluster, name, config string) {
	p := packageOf(g, cluster, name)
	before := p.DeepCopy()
	p.Spec.Config = config
	g.Expect(mgmt.Client.Patch(context.Background(), p, ctrlclient.MergeFrom(before))).To(Succeed())
}

// deleteCluster deletes c and waits until it is gone (its Packages uninstalled).
func deleteCluster(t *testing.T, c *flotillav1.Cluster) {
	t.Helper()
	deleteClusterWithin(t, c, timeout)
}
