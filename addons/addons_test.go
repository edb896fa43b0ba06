package addons_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flotilla-dev/flotilla/addons"
	"github.com/flotilla-dev/flotilla/addons/desired"
	"github.com/flotilla-dev/flotilla/addons/engine"
	"github.com/flotilla-dev/flotilla/addons/values"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/killtest"
	"github.com/flotilla-dev/flotilla/internal/proctest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// The tests run the addons component (both reconcilers, as addons.Setup wires them) in a real
// manager against a real kube-apiserver with CAPI's CRDs. Releases of Clusters given a workload
// API server (useWorkloadClusters: real_engine_test.go, rollout_test.go, dependencies_test.go)
// go through pkg/helm's engine into it. The tests of fan-out, values and the release lifecycle
// in this file use the hand-written engine.Fake, keyed by the host of the REST config the fake
// cluster cache hands out per Cluster: what they check is the reconcilers' bookkeeping, and two
// of them need what a real engine does not do on demand, an install that fails in one cluster
// with a given error and then heals (engine.Fake.FailInstalls).

var (
	env      *testenv.Environment
	fake     = &engine.Fake{}
	clusters = &clusterCache{configs: map[ctrlclient.ObjectKey]*rest.Config{}, unreachable: map[ctrlclient.ObjectKey]bool{}}
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
	// uninstallTimeout is short, so the orphaning of releases of unreachable clusters is seen;
	// the packages tests use the same.
	uninstallTimeout = 5 * time.Second
)

func TestMain(m *testing.M) {
	values.RunWorkerIfRequested()
	if killtest.Child() {
		os.Exit(killedManagerMain())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e, err := testenv.Start(testenv.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	env = e
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		}
	}()
	defer stopWorkloads()
	defer clusters.disconnect(nil)
	defer stopManager()
	return m.Run()
}

// manager starts the addons component once for the package's tests, with engine.Fake or, when
// the real engine test asks, with the real one through a routing engine.
var (
	managerOnce sync.Once
	managerErr  error
	managerStop func() error
	router      = &routingEngine{fallback: fake}
)

func startManager(t testing.TB) {
	t.Helper()
	managerOnce.Do(func() {
		_, managerStop, managerErr = env.StartManager(setupAddons)
	})
	if managerErr != nil {
		t.Fatal(managerErr)
	}
}

func setupAddons(ctx context.Context, mgr ctrl.Manager) error {
	return addons.Setup(ctx, mgr, addons.Options{ClusterCache: clusters, Engine: router, UninstallTimeout: uninstallTimeout})
}

// restartManager stops the manager, runs whileStopped, and starts a new manager with a new Helm
// engine (on the same chart cache), as a restarted process would.
func restartManager(t testing.TB, whileStopped func()) {
	t.Helper()
	stopManager()
	clusters.disconnect(nil) // the watches went with the manager's controller
	whileStopped()
	router.mu.Lock()
	router.real = &helm.Engine{ChartCache: workloads.cache}
	router.mu.Unlock()
	_, managerStop, managerErr = env.StartManagerWith(testenv.ManagerOptions{Restart: true}, setupAddons)
	if managerErr != nil {
		t.Fatal(managerErr)
	}
}

// stopManager stops the manager, if a test started it, before the API server stops.
func stopManager() {
	if managerStop != nil {
		if err := managerStop(); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
		managerStop = nil
	}
}

// clusterCache hands out a REST config per Cluster: the registered one, or one whose host names
// the Cluster (for engine.Fake); unreachable Clusters get an error. Like CAPI's ClusterCache, it
// watches the Clusters with a registered config (a workload API server) through one cache per
// cluster, adding each named watch once per connection; a Cluster of engine.Fake, with no API
// server to watch, is never connected, so its releases are polled.
type clusterCache struct {
	mu          sync.Mutex
	configs     map[ctrlclient.ObjectKey]*rest.Config
	unreachable map[ctrlclient.ObjectKey]bool
	connections map[ctrlclient.ObjectKey]*connection
}

// connection is what clusterCache keeps of a watched cluster: its cache and its watches' names.
type connection struct {
	cache   ctrlcache.Cache
	stop    context.CancelFunc
	watches map[string]bool
}

func (c *clusterCache) Watch(ctx context.Context, key ctrlclient.ObjectKey, w clustercache.Watcher) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cfg, ok := c.configs[key]
	if !ok || c.unreachable[key] {
		return fmt.Errorf("watching %T in cluster %s: %w", w.Object(), key, clustercache.ErrClusterNotConnected)
	}
	conn := c.connections[key]
	if conn == nil {
		// As CAPI's cluster accessor: no client timeout on the informers' long-running watches.
		cacheCfg := rest.CopyConfig(cfg)
		cacheCfg.Timeout = 11 * time.Minute
		cache, err := ctrlcache.New(cacheCfg, ctrlcache.Options{DefaultTransform: ctrlcache.TransformStripManagedFields()})
		if err != nil {
			return err
		}
		cacheCtx, stop := context.WithCancel(context.Background())
		go func() { _ = cache.Start(cacheCtx) }()
		if !cache.WaitForCacheSync(ctx) { // as CAPI's, before any watch is added
			stop()
			return fmt.Errorf("watching cluster %s: the cache did not start", key)
		}
		conn = &connection{cache: cache, stop: stop, watches: map[string]bool{}}
		if c.connections == nil {
			c.connections = map[ctrlclient.ObjectKey]*connection{}
		}
		c.connections[key] = conn
	}
	if conn.watches[w.Name()] {
		return nil
	}
	if err := w.Watch(conn.cache); err != nil {
		return err
	}
	conn.watches[w.Name()] = true
	return nil
}

// disconnect stops the watches of cluster key, or of every cluster when key is nil, as CAPI's
// ClusterCache does when it loses a connection or its manager stops.
func (c *clusterCache) disconnect(key *ctrlclient.ObjectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, conn := range c.connections {
		if key == nil || k == *key {
			conn.stop()
			delete(c.connections, k)
		}
	}
}

func (c *clusterCache) GetRESTConfig(_ context.Context, key ctrlclient.ObjectKey) (*rest.Config, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unreachable[key] {
		return nil, fmt.Errorf("cluster %s: connection refused", key)
	}
	if cfg, ok := c.configs[key]; ok {
		return rest.CopyConfig(cfg), nil
	}
	return &rest.Config{Host: fakeHost(key.Namespace, key.Name)}, nil
}

func (c *clusterCache) setUnreachable(key ctrlclient.ObjectKey, unreachable bool) {
	if unreachable {
		c.disconnect(&key)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unreachable[key] = unreachable
}

func fakeHost(namespace, cluster string) string { return "https://" + cluster + "." + namespace }

// routingEngine sends releases of clusters with a registered config to real, the rest to the
// fallback.
type routingEngine struct {
	mu       sync.Mutex
	real     engine.Engine
	hosts    map[string]bool
	fallback engine.Engine
}

func (r *routingEngine) pick(cfg *rest.Config) engine.Engine {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hosts[cfg.Host] {
		return r.real
	}
	return r.fallback
}

func (r *routingEngine) InstallOrUpgrade(ctx context.Context, cfg *rest.Config, rel engine.Release) (engine.Result, error) {
	return r.pick(cfg).InstallOrUpgrade(ctx, cfg, rel)
}
func (r *routingEngine) Uninstall(ctx context.Context, cfg *rest.Config, name, namespace string) error {
	return r.pick(cfg).Uninstall(ctx, cfg, name, namespace)
}
func (r *routingEngine) Get(ctx context.Context, cfg *rest.Config, name, namespace string) (*engine.InstalledRelease, error) {
	return r.pick(cfg).Get(ctx, cfg, name, namespace)
}
func (r *routingEngine) Diff(ctx context.Context, cfg *rest.Config, rel engine.Release) (string, error) {
	return r.pick(cfg).Diff(ctx, cfg, rel)
}
func (r *routingEngine) Rollback(ctx context.Context, cfg *rest.Config, name, namespace string, revision int) error {
	return r.pick(cfg).Rollback(ctx, cfg, name, namespace, revision)
}

// createCluster creates a CAPI Cluster with labels.
func createCluster(g Gomega, ns, name string, labels map[string]string) *clusterv1.Cluster {
	c := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: clusterv1.ClusterSpec{ClusterNetwork: clusterv1.ClusterNetwork{
			Pods: clusterv1.NetworkRanges{CIDRBlocks: []string{"192.168.0.0/16"}},
		}},
	}
	g.Expect(env.Client.Create(context.Background(), c)).To(Succeed())
	return c
}

// proxy returns a HelmChartProxy selecting env=prod.
func proxy(ns, name string) *addonsv1.HelmChartProxy {
	return &addonsv1.HelmChartProxy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: addonsv1.HelmChartProxySpec{
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
			ValuesTemplate:  "clusterName: {{ .Cluster.metadata.name }}\nreplicas: 1\n",
			ReleaseSpec: addonsv1.ReleaseSpec{
				ChartName: "hello",
				RepoURL:   "oci://registry.example/charts",
				Version:   "1.0.0",
				Namespace: "hello",
			},
		},
	}
}

func getHRP(g Gomega, ns, proxyName, cluster string) *addonsv1.HelmReleaseProxy {
	hrp := &addonsv1.HelmReleaseProxy{}
	g.Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: desired.ReleaseProxyName(proxyName, cluster)}, hrp)).To(Succeed())
	return hrp
}

func condition(conds []metav1.Condition, t string) metav1.Condition {
	if c := meta.FindStatusCondition(conds, t); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// eventuallyReady waits until the HelmReleaseProxy of proxyName for cluster is Ready for its
// current generation, and returns it.
func eventuallyReady(g Gomega, ns, proxyName, cluster string) *addonsv1.HelmReleaseProxy {
	var hrp *addonsv1.HelmReleaseProxy
	g.Eventually(func(g Gomega) {
		hrp = getHRP(g, ns, proxyName, cluster)
		c := condition(hrp.Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		g.Expect(c.ObservedGeneration).To(Equal(hrp.Generation))
	}, timeout, interval).Should(Succeed())
	return hrp
}

func fakeRelease(ns, cluster, releaseNamespace, name string) (engine.Release, int, bool) {
	return fake.Release(fakeHost(ns, cluster), releaseNamespace, name)
}

// eventReasons returns the reasons of the Events regarding obj.
func eventReasons(g Gomega, obj ctrlclient.Object) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(context.Background(), list, ctrlclient.InNamespace(obj.GetNamespace()))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Name == obj.GetName() {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

func TestAProxyInstallsItsChartIntoEverySelectedClusterAndOnlyThere(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	w2 := createCluster(g, ns, "w2", map[string]string{"env": "prod"})
	w3 := createCluster(g, ns, "w3", map[string]string{"env": "dev"})
	hcp := proxy(ns, "hello")
	g.Expect(env.Client.Create(ctx, hcp)).To(Succeed())

	for _, c := range []string{"w1", "w2"} {
		hrp := eventuallyReady(g, ns, "hello", c)
		g.Expect(hrp.Spec.ClusterName).To(Equal(c))
		g.Expect(hrp.Spec.ReleaseName).To(Equal("hello"), "the release is named after the proxy")
		g.Expect(hrp.Spec.Values).To(Equal("clusterName: " + c + "\nreplicas: 1\n"))
		g.Expect(hrp.Labels).To(HaveKeyWithValue(addonsv1.HelmChartProxyNameLabel, "hello"))
		g.Expect(metav1.IsControlledBy(hrp, getProxy(g, ns, "hello"))).To(BeTrue())
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(1))
		g.Expect(hrp.Status.ReleaseStatus).To(Equal("deployed"))
		g.Expect(hrp.Finalizers).To(ContainElement(addonsv1.HelmReleaseProxyFinalizer))
		rel, _, ok := fakeRelease(ns, c, "hello", "hello")
		g.Expect(ok).To(BeTrue())
		g.Expect(rel.Values).To(Equal(map[string]any{"clusterName": c, "replicas": float64(1)}))
		g.Expect(eventReasons(g, hrp)).To(ContainElement("Installed"))
	}
	_, _, ok := fakeRelease(ns, "w3", "hello", "hello")
	g.Expect(ok).To(BeFalse(), "w3 is not selected")
	g.Eventually(func(g Gomega) {
		p := getProxy(g, ns, "hello")
		g.Expect(p.Status.MatchingClusters).To(Equal([]string{"w1", "w2"}))
		g.Expect(p.Status.ReadyClusters).To(BeEquivalentTo(2))
		g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
		g.Expect(condition(p.Status.Conditions, addonsv1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())

	// w2 stops matching, w3 starts.
	patchLabels(g, w2, map[string]string{"env": "dev"})
	patchLabels(g, w3, map[string]string{"env": "prod"})
	eventuallyReady(g, ns, "hello", "w3")
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: desired.ReleaseProxyName("hello", "w2")}, &addonsv1.HelmReleaseProxy{})
		return apierrors.IsNotFound(err)
	}, timeout, interval).Should(BeTrue(), "the HelmReleaseProxy of a cluster that stopped matching is deleted")
	_, _, ok = fakeRelease(ns, "w2", "hello", "hello")
	g.Expect(ok).To(BeFalse(), "and its release uninstalled")
	g.Eventually(func(g Gomega) {
		g.Expect(getProxy(g, ns, "hello").Status.MatchingClusters).To(Equal([]string{"w1", "w3"}))
	}, timeout, interval).Should(Succeed())

	// Deleting the proxy uninstalls everywhere, then the proxy goes.
	g.Expect(env.Client.Delete(ctx, getProxy(g, ns, "hello"))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(hcp), &addonsv1.HelmChartProxy{}))
	}, timeout, interval).Should(BeTrue())
	for _, c := range []string{"w1", "w3"} {
		_, _, ok := fakeRelease(ns, c, "hello", "hello")
		g.Expect(ok).To(BeFalse(), "release of %s uninstalled", c)
	}
}

func TestAReleaseUpgradesOnlyWhenItsValuesOrChartChange(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	g.Expect(env.Client.Create(ctx, proxy(ns, "hello"))).To(Succeed())
	hrp := eventuallyReady(g, ns, "hello", "w1")
	g.Expect(hrp.Status.Revision).To(BeEquivalentTo(1))

	// A resync with nothing changed writes nothing.
	writes := fake.WriteCount()
	touch(g, hrp)
	g.Consistently(func(g Gomega) {
		g.Expect(getHRP(g, ns, "hello", "w1").Status.Revision).To(BeEquivalentTo(1))
	}, 2*time.Second, interval).Should(Succeed())
	_, rev, _ := fakeRelease(ns, "w1", "hello", "hello")
	g.Expect(rev).To(Equal(1))
	g.Expect(fake.WriteCount()).To(Equal(writes), "no write to any cluster")

	// Changed values upgrade.
	updateProxy(g, ns, "hello", func(p *addonsv1.HelmChartProxy) {
		p.Spec.ValuesTemplate = "clusterName: {{ .Cluster.metadata.name }}\nreplicas: 2\n"
	})
	g.Eventually(func(g Gomega) {
		hrp := eventuallyReady(g, ns, "hello", "w1")
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(2))
		g.Expect(eventReasons(g, hrp)).To(ContainElement("Upgraded"))
	}, timeout, interval).Should(Succeed())

	// A changed chart and namespace reinstall: the old release is uninstalled.
	updateProxy(g, ns, "hello", func(p *addonsv1.HelmChartProxy) {
		p.Spec.ChartName = "hello-v2"
		p.Spec.Namespace = "hello2"
	})
	g.Eventually(func(g Gomega) {
		hrp := eventuallyReady(g, ns, "hello", "w1")
		g.Expect(hrp.Status.Installed).To(Equal(&addonsv1.InstalledRelease{
			ReleaseName: "hello", Namespace: "hello2", RepoURL: "oci://registry.example/charts", ChartName: "hello-v2",
		}))
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(1))
		g.Expect(eventReasons(g, hrp)).To(ContainElements("Reinstalling", "Uninstalled"))
	}, timeout, interval).Should(Succeed())
	_, _, old := fakeRelease(ns, "w1", "hello", "hello")
	g.Expect(old).To(BeFalse(), "the old release is uninstalled")
	rel, _, ok := fakeRelease(ns, "w1", "hello2", "hello")
	g.Expect(ok).To(BeTrue())
	g.Expect(rel.Chart.Name).To(Equal("hello-v2"))

	// A release removed from the cluster behind Flotilla's back is installed again on resync.
	g.Expect(fake.Uninstall(ctx, &rest.Config{Host: fakeHost(ns, "w1")}, "hello", "hello2")).To(Succeed())
	touch(g, getHRP(g, ns, "hello", "w1"))
	g.Eventually(func() bool {
		_, _, ok := fakeRelease(ns, "w1", "hello2", "hello")
		return ok
	}, timeout, interval).Should(BeTrue())
}

func TestInstallOnceLeavesAnInstalledReleaseAlone(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	p := proxy(ns, "once")
	p.Spec.ReconcileStrategy = addonsv1.ReconcileInstallOnce
	g.Expect(env.Client.Create(context.Background(), p)).To(Succeed())
	eventuallyReady(g, ns, "once", "w1")

	updateProxy(g, ns, "once", func(p *addonsv1.HelmChartProxy) { p.Spec.ValuesTemplate = "replicas: 5" })
	g.Eventually(func(g Gomega) {
		hrp := eventuallyReady(g, ns, "once", "w1")
		g.Expect(hrp.Spec.Values).To(Equal("replicas: 5\n"))
	}, timeout, interval).Should(Succeed())
	rel, rev, _ := fakeRelease(ns, "w1", "hello", "once")
	g.Expect(rev).To(Equal(1))
	g.Expect(rel.Values).To(HaveKeyWithValue("clusterName", "w1"), "the values of the first install stay")
}

func TestValuesFromConfigMapsAndSecretsAreMergedUnderTheTemplate(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	g.Expect(env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "base", Namespace: ns},
		Data:       map[string]string{"values.yaml": "replicas: 3\nimage:\n  tag: v1\n  pullPolicy: Always\n"},
	})).To(Succeed())
	p := proxy(ns, "vf")
	p.Spec.ValuesFrom = []addonsv1.ValuesReference{
		{Kind: addonsv1.ConfigMapValues, Name: "base"},
		{Kind: addonsv1.SecretValues, Name: "creds", Key: "extra"},
	}
	p.Spec.ValuesTemplate = "image:\n  tag: v2\n"
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())

	// The Secret is missing: the release waits, saying which source.
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "vf", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.ValuesErrorReason))
		g.Expect(c.Message).To(ContainSubstring("Secret " + ns + "/creds not found"))
	}, timeout, interval).Should(Succeed())

	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds", Namespace: ns},
		StringData: map[string]string{"extra": "password: s3cret\n"},
	})).To(Succeed())
	touch(g, getHRP(g, ns, "vf", "w1"))
	hrp := eventuallyReady(g, ns, "vf", "w1")
	g.Expect(hrp.Spec.Values).NotTo(ContainSubstring("s3cret"), "Secret values are never copied into the spec")
	rel, _, _ := fakeRelease(ns, "w1", "hello", "vf")
	g.Expect(rel.Values).To(Equal(map[string]any{
		"replicas": float64(3),
		"password": "s3cret",
		"image":    map[string]any{"tag": "v2", "pullPolicy": "Always"},
	}))
	g.Expect(hrp.Status.ValuesHash).To(HavePrefix("sha256:"))
}

// A team's change of its values reaches its release at once, not at the next resync (10 minutes
// here): the ConfigMaps of tenant values are watched.
func TestATenantsChangeOfHerValuesUpgradesHerReleaseAtOnce(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	createCluster(g, ns, "w2", map[string]string{"env": "prod"})
	p := proxy(ns, "tv")
	p.Spec.TenantValues = true
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "tv", "w1")
	eventuallyReady(g, ns, "tv", "w2")
	const soon = 10 * time.Second // well before the resync
	releaseOf := func(g Gomega, cluster string) (any, int) {
		rel, revision, ok := fakeRelease(ns, cluster, "hello", "tv")
		g.Expect(ok).To(BeTrue())
		return rel.Values["replicas"], revision
	}
	expectRelease := func(cluster string, replicas float64, revision int) {
		g.Eventually(func(g Gomega) {
			got, rev := releaseOf(g, cluster)
			g.Expect(got).To(Equal(replicas))
			g.Expect(rev).To(Equal(revision))
		}, soon, interval).Should(Succeed(), "%s: replicas %v at revision %d", cluster, replicas, revision)
	}

	values := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns, Labels: map[string]string{
			addonsv1.TenantValuesLabel: "tv", clusterv1.ClusterNameLabel: "w1",
		}},
		Data: map[string]string{"values.yaml": "replicas: 3\n"},
	}
	g.Expect(env.Client.Create(ctx, values)).To(Succeed())
	expectRelease("w1", 3, 2)

	values.Data["values.yaml"] = "replicas: 4\n"
	g.Expect(env.Client.Update(ctx, values)).To(Succeed())
	expectRelease("w1", 4, 3)

	// No longer labelled for the proxy: its values go.
	delete(values.Labels, addonsv1.TenantValuesLabel)
	g.Expect(env.Client.Update(ctx, values)).To(Succeed())
	expectRelease("w1", 1, 4)
	g.Consistently(func(g Gomega) {
		got, rev := releaseOf(g, "w2")
		g.Expect(got).To(Equal(float64(1)))
		g.Expect(rev).To(Equal(1))
	}, time.Second, interval).Should(Succeed(), "w2's release, which the values were never for, was left alone")
}

func TestATemplateFailingForOneClusterDoesNotHoldBackTheOthers(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod", "region": "eu"})
	createCluster(g, ns, "w2", map[string]string{"env": "prod"})
	p := proxy(ns, "tmpl")
	p.Spec.ValuesTemplate = "cluster: {{ .Cluster.metadata.name }}\nregion: {{ .Cluster.metadata.labels.region }}\n"
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())

	eventuallyReady(g, ns, "tmpl", "w1")
	g.Eventually(func(g Gomega) {
		p := getProxy(g, ns, "tmpl")
		c := condition(p.Status.Conditions, addonsv1.ValuesRenderedCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(addonsv1.TemplateErrorReason))
		g.Expect(c.Message).To(ContainSubstring(`cluster w2: valuesTemplate line 2, column 19: <.Cluster.metadata.labels.region>: map has no entry for key "region"`))
		g.Expect(condition(p.Status.Conditions, addonsv1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(p.Status.ReadyClusters).To(BeEquivalentTo(1))
	}, timeout, interval).Should(Succeed())
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: desired.ReleaseProxyName("tmpl", "w2")}, &addonsv1.HelmReleaseProxy{}))).To(BeTrue())
}

func TestHelmsErrorIsTheReadyMessageAndOtherClustersGoOn(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	createCluster(g, ns, "w2", map[string]string{"env": "prod"})
	helmErr := errors.New(`chart "hello" version "9.9.9" not found in oci://registry.example/charts`)
	fake.FailInstalls(fakeHost(ns, "w2"), helmErr)
	g.Expect(env.Client.Create(context.Background(), proxy(ns, "hello"))).To(Succeed())

	eventuallyReady(g, ns, "hello", "w1")
	g.Eventually(func(g Gomega) {
		hrp := getHRP(g, ns, "hello", "w2")
		c := condition(hrp.Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(addonsv1.InstallFailedReason))
		g.Expect(c.Message).To(Equal(helmErr.Error()))
		g.Expect(eventReasons(g, hrp)).To(ContainElement("InstallFailed"))
	}, timeout, interval).Should(Succeed())

	fake.FailInstalls(fakeHost(ns, "w2"), nil)
	eventuallyReady(g, ns, "hello", "w2")
}

func TestPausedClustersAndProxiesAreLeftAlone(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	w2 := createCluster(g, ns, "w2", map[string]string{"env": "prod"})
	g.Expect(env.Client.Create(context.Background(), proxy(ns, "hello"))).To(Succeed())
	eventuallyReady(g, ns, "hello", "w1")
	eventuallyReady(g, ns, "hello", "w2")

	patchAnnotations(g, w2, map[string]string{clusterv1.PausedAnnotation: ""})
	// The manager's cache sees the pause a moment after the API server: until w2's
	// HelmReleaseProxy says it is paused, a change to the proxy could still reach w2.
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getHRP(g, ns, "hello", "w2").Status.Conditions, addonsv1.PausedCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
	updateProxy(g, ns, "hello", func(p *addonsv1.HelmChartProxy) { p.Spec.ValuesTemplate = "replicas: 7" })
	g.Eventually(func(g Gomega) {
		g.Expect(eventuallyReady(g, ns, "hello", "w1").Spec.Values).To(Equal("replicas: 7\n"))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getHRP(g, ns, "hello", "w2").Spec.Values).To(ContainSubstring("clusterName: w2"))
		_, rev, _ := fakeRelease(ns, "w2", "hello", "hello")
		g.Expect(rev).To(Equal(1))
	}, 2*time.Second, interval).Should(Succeed())

	// A paused proxy changes nothing.
	updateProxy(g, ns, "hello", func(p *addonsv1.HelmChartProxy) {
		p.Annotations = map[string]string{clusterv1.PausedAnnotation: ""}
		p.Spec.ValuesTemplate = "replicas: 8"
	})
	g.Eventually(func(g Gomega) {
		g.Expect(condition(getProxy(g, ns, "hello").Status.Conditions, addonsv1.PausedCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getHRP(g, ns, "hello", "w1").Spec.Values).To(Equal("replicas: 7\n"))
	}, 2*time.Second, interval).Should(Succeed())
}

func TestAReleaseInAnUnreachableClusterIsOrphanedAfterTheUninstallTimeout(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w1 := createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	g.Expect(env.Client.Create(ctx, proxy(ns, "hello"))).To(Succeed())
	hrp := eventuallyReady(g, ns, "hello", "w1")

	clusters.setUnreachable(ctrlclient.ObjectKeyFromObject(w1), true)
	defer clusters.setUnreachable(ctrlclient.ObjectKeyFromObject(w1), false)
	start := time.Now()
	g.Expect(env.Client.Delete(ctx, getProxy(g, ns, "hello"))).To(Succeed())

	// While waiting, Ready says why.
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "hello", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.ClusterUnreachableReason))
		g.Expect(c.Message).To(ContainSubstring("waiting up to"))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(hrp), &addonsv1.HelmReleaseProxy{}))
	}, timeout, interval).Should(BeTrue())
	g.Expect(time.Since(start)).To(BeNumerically(">=", uninstallTimeout-time.Second))
	g.Expect(eventReasons(g, hrp)).To(ContainElement("Orphaned"))
	_, _, ok := fakeRelease(ns, "w1", "hello", "hello")
	g.Expect(ok).To(BeTrue(), "the release is left in the cluster")
}

func TestADeletedClusterTakesItsReleaseWithIt(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w1 := createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	g.Expect(env.Client.Create(ctx, proxy(ns, "hello"))).To(Succeed())
	hrp := eventuallyReady(g, ns, "hello", "w1")
	clusters.setUnreachable(ctrlclient.ObjectKeyFromObject(w1), true)
	defer clusters.setUnreachable(ctrlclient.ObjectKeyFromObject(w1), false)

	g.Expect(env.Client.Delete(ctx, w1)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(hrp), &addonsv1.HelmReleaseProxy{}))
	}, uninstallTimeout-time.Second, interval).Should(BeTrue(), "no waiting for an unreachable cluster that is gone")
	g.Expect(eventReasons(g, hrp)).To(ContainElement("ReleaseLeftWithCluster"))
	g.Eventually(func(g Gomega) {
		p := getProxy(g, ns, "hello")
		g.Expect(p.Status.MatchingClusters).To(BeEmpty())
		g.Expect(condition(p.Status.Conditions, addonsv1.ReadyCondition).Reason).To(Equal(addonsv1.NoClustersSelectedReason))
	}, timeout, interval).Should(Succeed())
}

func getProxy(g Gomega, ns, name string) *addonsv1.HelmChartProxy {
	p := &addonsv1.HelmChartProxy{}
	g.Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: name}, p)).To(Succeed())
	return p
}

func updateProxy(g Gomega, ns, name string, change func(*addonsv1.HelmChartProxy)) {
	g.Eventually(func() error {
		p := getProxy(g, ns, name)
		change(p)
		return env.Client.Update(context.Background(), p)
	}, timeout, interval).Should(Succeed())
}

func patchLabels(g Gomega, obj ctrlclient.Object, labels map[string]string) {
	before := obj.DeepCopyObject().(ctrlclient.Object)
	obj.SetLabels(labels)
	g.Expect(env.Client.Patch(context.Background(), obj, ctrlclient.MergeFrom(before))).To(Succeed())
}

func patchAnnotations(g Gomega, obj ctrlclient.Object, annotations map[string]string) {
	before := obj.DeepCopyObject().(ctrlclient.Object)
	obj.SetAnnotations(annotations)
	g.Expect(env.Client.Patch(context.Background(), obj, ctrlclient.MergeFrom(before))).To(Succeed())
}

// touch changes an annotation of hrp, which makes the reconciler look at it again (a resync).
func touch(g Gomega, hrp *addonsv1.HelmReleaseProxy) {
	before := hrp.DeepCopy()
	if hrp.Annotations == nil {
		hrp.Annotations = map[string]string{}
	}
	hrp.Annotations["test.flotilla.dev/touched"] = time.Now().Format(time.RFC3339Nano)
	g.Expect(env.Client.Patch(context.Background(), hrp, ctrlclient.MergeFrom(before))).To(Succeed())
}

func TestAReleaseWaitsInEachClusterUntilItsDependenciesAreReadyThere(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	createCluster(g, ns, "w2", map[string]string{"env": "prod"})
	fake.FailInstalls(fakeHost(ns, "w2"), errors.New("the CRDs of base are broken"))
	defer fake.FailInstalls(fakeHost(ns, "w2"), nil)

	base := proxy(ns, "base")
	app := proxy(ns, "app")
	app.Spec.DependsOn = []string{"base"}
	g.Expect(env.Client.Create(ctx, app)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "app", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.WaitingForDependenciesReason))
		g.Expect(c.Message).To(ContainSubstring("waiting for HelmChartProxy base to select cluster w1"))
	}, timeout, interval).Should(Succeed())

	g.Expect(env.Client.Create(ctx, base)).To(Succeed())
	eventuallyReady(g, ns, "base", "w1")
	eventuallyReady(g, ns, "app", "w1") // w1 goes on as soon as base is Ready there
	appWaitsForBrokenBase := func(g Gomega) {
		c := condition(getHRP(g, ns, "app", "w2").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.WaitingForDependenciesReason))
		g.Expect(c.Message).To(ContainSubstring("the CRDs of base are broken"))
		_, _, ok := fakeRelease(ns, "w2", "hello", "app")
		g.Expect(ok).To(BeFalse())
	}
	// base's first install on w2 may still be running when app is Ready on w1; once it has
	// failed, its retries keep showing the failure, and app waits on w2.
	g.Eventually(appWaitsForBrokenBase, timeout, interval).Should(Succeed())
	g.Consistently(appWaitsForBrokenBase, 2*time.Second, interval).Should(Succeed())

	fake.FailInstalls(fakeHost(ns, "w2"), nil)
	eventuallyReady(g, ns, "base", "w2")
	eventuallyReady(g, ns, "app", "w2")
}

func rolloutOf(g Gomega, ns, name string) addonsv1.RolloutStatus {
	p := getProxy(g, ns, name)
	g.Expect(p.Status.Rollout).NotTo(BeNil())
	g.Expect(p.Status.Rollout.Generation).To(Equal(p.Generation))
	return *p.Status.Rollout
}

func TestTheMetricsAreOnTheManagersRegistry(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	p := proxy(ns, "metered")
	p.Spec.Rollout = &addonsv1.Rollout{}
	g.Expect(env.Client.Create(context.Background(), p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(rolloutOf(g, ns, "metered").Phase).To(Equal(addonsv1.RolloutComplete))
	}, timeout, interval).Should(Succeed())

	g.Eventually(func(g Gomega) {
		values := gatherMetrics(g)
		g.Expect(values).To(HaveKeyWithValue("flotilla_addons_rollout_clusters{helmchartproxy=metered,namespace="+ns+",state=total,}", 1.0))
		g.Expect(values).To(HaveKey("flotilla_addons_releases{state=Ready,}"))
		g.Expect(values).To(HaveKey("flotilla_addons_helm_actions_total{action=install-or-upgrade,result=success,}"))
	}, timeout, interval).Should(Succeed())
}

// gatherMetrics reads the manager's metrics registry, as name{label=value,...,} → value.
func gatherMetrics(g Gomega) map[string]float64 {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	values := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := ""
			for _, l := range m.GetLabel() {
				labels += l.GetName() + "=" + l.GetValue() + ","
			}
			values[f.GetName()+"{"+labels+"}"] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	return values
}

// A values template that would run for hours or exhaust memory (see addons/values) fails its
// proxy's ValuesRendered condition within a second, keeps the cluster's release as it was, and
// leaves the manager serving every other proxy.
func TestARunawayTemplateFailsItsProxyFastAndTheManagerGoesOn(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	g.Expect(env.Client.Create(ctx, proxy(ns, "runaway"))).To(Succeed())
	installed := eventuallyReady(g, ns, "runaway", "w1")

	for i, template := range []string{
		`{{ range until 2000000000 }}{{ end }}`,
		`{{ range until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}{{ end }}{{ end }}`,
		`{{ $s := "x" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}a: {{ len $s }}`,
	} {
		updateProxy(g, ns, "runaway", func(p *addonsv1.HelmChartProxy) { p.Spec.ValuesTemplate = template })
		start := time.Now()
		g.Eventually(func(g Gomega) {
			p := getProxy(g, ns, "runaway")
			c := condition(p.Status.Conditions, addonsv1.ValuesRenderedCondition)
			g.Expect(c.ObservedGeneration).To(Equal(p.Generation))
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(addonsv1.TemplateErrorReason))
			// (or, on a machine too busy to give the render any CPU, starved)
			g.Expect(c.Message).To(Or(HavePrefix("cluster w1: valuesTemplate: rendering was stopped"),
				HavePrefix("cluster w1: valuesTemplate: this machine is too busy")))
		}, timeout, 10*time.Millisecond).Should(Succeed(), "template %d", i)
		t.Logf("template %d failed its proxy after %s", i, time.Since(start))
		g.Expect(time.Since(start)).To(BeNumerically("<", time.Second), "template %d", i)
		// The release is left as it was.
		hrp := getHRP(g, ns, "runaway", "w1")
		g.Expect(hrp.Generation).To(Equal(installed.Generation))
		g.Expect(hrp.Spec.Values).To(Equal(installed.Spec.Values))
	}

	// The manager goes on: a new proxy installs its release.
	createCluster(g, ns, "w2", map[string]string{"env": "prod", "tier": "gold"})
	p := proxy(ns, "after")
	p.Spec.ClusterSelector = metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "after", "w2")
}

// A render that did not run to its end for a reason outside the template says why, and the proxy
// renders again shortly, without waiting for its resync.
func TestARenderInterruptedOutsideItsTemplateIsRenderedAgainShortly(t *testing.T) {
	startManager(t)
	for _, tc := range []struct {
		name string
		// signal is sent to every render worker of the manager (this process), those started
		// later too (the proxies of other tests may use up the first ones).
		signal syscall.Signal
		says   string
	}{
		{name: "its worker got no CPU, as on a machine far too busy", signal: syscall.SIGSTOP, says: "this machine is too busy to render it now"},
		{name: "its worker was killed", signal: syscall.SIGKILL, says: "a render worker failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.NewNamespace(t)
			createCluster(g, ns, "w1", map[string]string{"env": "prod"})
			g.Expect(env.Client.Create(ctx, proxy(ns, "interrupted"))).To(Succeed())
			eventuallyReady(g, ns, "interrupted", "w1")

			signaled := map[int]bool{}
			signalWorkers := func() {
				for _, pid := range proctest.Children(t, "__flotilla-values-render-worker") { // addons/values' workerArg
					if !signaled[pid] && syscall.Kill(pid, tc.signal) == nil {
						signaled[pid] = true
					}
				}
			}
			resumeWorkers := func() {
				if tc.signal != syscall.SIGSTOP {
					return
				}
				for pid := range signaled {
					_ = syscall.Kill(pid, syscall.SIGCONT)
				}
			}
			defer resumeWorkers()
			signalWorkers()
			updateProxy(g, ns, "interrupted", func(p *addonsv1.HelmChartProxy) {
				p.Spec.ValuesTemplate = "clusterName: {{ .Cluster.metadata.name }}\nreplicas: 2\n"
			})
			g.Eventually(func(g Gomega) {
				signalWorkers()
				p := getProxy(g, ns, "interrupted")
				c := condition(p.Status.Conditions, addonsv1.ValuesRenderedCondition)
				g.Expect(c.ObservedGeneration).To(Equal(p.Generation))
				g.Expect(c.Message).To(ContainSubstring(tc.says))
			}, timeout, 10*time.Millisecond).Should(Succeed())

			// The workers work again: the next render, a few seconds later, succeeds.
			resumeWorkers()
			g.Eventually(func(g Gomega) {
				p := getProxy(g, ns, "interrupted")
				c := condition(p.Status.Conditions, addonsv1.ValuesRenderedCondition)
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
				g.Expect(getHRP(g, ns, "interrupted", "w1").Spec.Values).To(ContainSubstring("replicas: 2"))
			}, 15*time.Second, interval).Should(Succeed())
		})
	}
}
