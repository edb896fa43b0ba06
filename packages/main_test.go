package packages_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/addons/values"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	clusterwebhooks "github.com/flotilla-dev/flotilla/cluster/webhooks"
	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/internal/killtest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/packages"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// The tests run the packages component (packages.Setup: the lifecycle, PBC and Package
// reconcilers and the Package webhook) in a real manager against a real management API server,
// with the real bundle source reading signed bundles from an in-process OCI registry and the real
// Helm engine installing charts from it into a second real API server, the workload cluster.
// The registry is Flotilla's as it serves other machines, over TLS to one user: the manager reaches
// it with the credentials and CA of the Secret package-defaults names.

var (
	// mgmt is the management cluster; workload the cluster Packages are installed into.
	mgmt, workload *testenv.Environment
	// reg is the OCI registry (TLS, one user); regHost its host:port, regConn how to reach it.
	reg     *charttest.SecureRegistry
	regHost string
	regConn registryconn.Config
	// signingKey signs bundles; its public key is in package-defaults.
	signingKey *ecdsa.PrivateKey
	// configs reaches the workload clusters by Cluster key.
	configs = &restConfigs{configs: map[ctrlclient.ObjectKey]*rest.Config{}}
	// engine is the Helm engine the running manager uses; chartCache its chart cache.
	engine     *helm.Engine
	chartCache string
	// stopManager stops the running manager.
	stopManager func() error
	// verifier is the manager's bundle verifier: the real one, which a test can hold.
	verifier = &heldVerifier{held: map[string]chan struct{}{}}
)

// heldVerifier is the real BundleVerifier, except that the verification of a bundle a test holds
// waits until the test releases it: the window between a bundle's spec changing and its
// verification, which is otherwise too short to look at.
type heldVerifier struct {
	mu   sync.Mutex
	held map[string]chan struct{}
}

func (v *heldVerifier) Verify(b *packagesv1.PackageBundle, key *ecdsa.PublicKey) error {
	v.mu.Lock()
	gate := v.held[b.Name]
	v.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return packages.BundleVerifier{}.Verify(b, key)
}

// hold makes the verification of bundle name wait until release is called.
func (v *heldVerifier) hold(name string) (release func()) {
	gate := make(chan struct{})
	v.mu.Lock()
	v.held[name] = gate
	v.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			v.mu.Lock()
			delete(v.held, name)
			v.mu.Unlock()
			close(gate)
		})
	}
}

const (
	timeout = 60 * time.Second
	// helmTimeout bounds the Helm actions of the test manager: a chart that hangs (hangingChart)
	// hangs that long.
	helmTimeout = 30 * time.Second
	// uninstallTimeout is how long after its Cluster's deletion a Package with
	// uninstallOnClusterDelete Ensure is tried (the addons tests use the same).
	uninstallTimeout = 5 * time.Second
	interval         = 100 * time.Millisecond
	// bundleRepository is the default source's repository of bundles.
	bundleRepository = "flotilla/bundles"
	// credentialsSecret holds the registry's credentials and CA; package-defaults names it.
	credentialsSecret = "test-registry-credentials"
)

// restConfigs stands in for CAPI's ClusterCache: configs by Cluster key, an error for others.
type restConfigs struct {
	mu      sync.Mutex
	configs map[ctrlclient.ObjectKey]*rest.Config
}

func (r *restConfigs) GetRESTConfig(_ context.Context, key ctrlclient.ObjectKey) (*rest.Config, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cfg, ok := r.configs[key]; ok {
		return cfg, nil
	}
	return nil, errors.New("connection to the workload cluster is down")
}

func (r *restConfigs) set(key ctrlclient.ObjectKey, cfg *rest.Config) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.configs[key] = cfg
}

// drop makes the cluster of key unreachable.
func (r *restConfigs) drop(key ctrlclient.ObjectKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.configs, key)
}

func TestMain(m *testing.M) {
	values.RunWorkerIfRequested() // the manager renders templates in workers: this program run again
	if killtest.Child() {
		os.Exit(killedManagerMain())
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if reg, err = charttest.StartSecureRegistry(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer reg.Close()
	regHost = reg.Host
	regConn = registryconn.Config{Username: reg.Username, Password: reg.Password, CAData: reg.CAPEM}
	if signingKey, err = bundle.GenerateKey(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	var wg sync.WaitGroup
	var mgmtErr, workloadErr error
	wg.Go(func() { mgmt, mgmtErr = testenv.Start(testenv.Options{Webhooks: true}) })
	wg.Go(func() { workload, workloadErr = testenv.Start(testenv.Options{SkipCRDs: true}) })
	wg.Wait()
	defer func() {
		for _, e := range []*testenv.Environment{mgmt, workload} {
			if err := e.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
			}
		}
	}()
	if err := errors.Join(mgmtErr, workloadErr); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	if err := writeDefaults(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	if chartCache, err = os.MkdirTemp("", "packages-charts-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = os.RemoveAll(chartCache) }()
	if err := startManager(testenv.ManagerOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := stopManager(); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	return m.Run()
}

// startManager starts a manager running the packages component, as the flotilla manager does,
// with a new Helm engine on chartCache; it sets engine and stopManager.
func startManager(o testenv.ManagerOptions) error {
	e := &helm.Engine{ChartCache: chartCache}
	_, stop, err := mgmt.StartManagerWith(o, func(ctx context.Context, mgr ctrl.Manager) error {
		// The Cluster webhooks are registered with the API server (Options.Webhooks installs all of
		// Flotilla's): serve them, so that Clusters can be created.
		if err := (&clusterwebhooks.Cluster{}).SetupWebhookWithManager(mgr); err != nil {
			return err
		}
		return packages.Setup(ctx, mgr, packages.Options{
			RESTConfigs: configs, Installer: e, Verifier: verifier, HelmTimeout: helmTimeout, UninstallTimeout: uninstallTimeout,
		})
	})
	if err != nil {
		return err
	}
	engine, stopManager = e, stop
	return nil
}

// writeDefaults creates flotilla-packages and package-defaults: the test registry, over TLS with
// the credentials and CA of credentialsSecret, and the signing key's public half.
func writeDefaults(ctx context.Context) error {
	pub, err := bundle.EncodePublicKey(&signingKey.PublicKey)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: packagesv1.PackagesNamespace}}
	if err := mgmt.Client.Create(ctx, ns); err != nil {
		return err
	}
	if err := mgmt.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: credentialsSecret, Namespace: packagesv1.PackagesNamespace},
		Data: map[string][]byte{
			packagesv1.CredentialsUsernameKey: []byte(reg.Username),
			packagesv1.CredentialsPasswordKey: []byte(reg.Password),
			packagesv1.CredentialsCAKey:       reg.CAPEM,
		},
	}); err != nil {
		return err
	}
	return mgmt.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: packagesv1.DefaultsConfigMapName, Namespace: packagesv1.PackagesNamespace},
		Data: map[string]string{
			packagesv1.DefaultsRegistryKey:          regHost,
			packagesv1.DefaultsRepositoryKey:        bundleRepository,
			packagesv1.DefaultsPublicKeyKey:         string(pub),
			packagesv1.DefaultsCredentialsSecretKey: credentialsSecret,
		},
	})
}

// chart is a charttest.Chart that pushes itself to the test registry for a bundle.
type chart struct{ charttest.Chart }

// helloChart is charttest's hello chart named name, its schema refusing negative replicas.
func helloChart(name, version string) chart {
	return chart{charttest.Hello(version, charttest.Named(name), charttest.NonNegativeReplicas())}
}

// push pushes c to the registry as charts/<name>:<version> and returns the bundle's view of it,
// with schema or, when that is empty, the chart's own.
func (c chart) push(t testing.TB, schema string) bundle.Version {
	t.Helper()
	digest := reg.Push(t, regHost+"/charts", c.Chart)
	if schema == "" {
		schema = c.Files["values.schema.json"]
	}
	return bundle.Version{Version: c.Version, Digest: digest, Schema: schema}
}

// pkg is a bundle package of charts pushed with push.
func pkg(name string, versions ...bundle.Version) bundle.Package {
	return bundle.Package{Name: name, Source: bundle.Source{Registry: regHost, Repository: "charts/" + name}, Versions: versions}
}

// pushBundle signs (with key; unsigned when nil) and pushes bundle v<minor>-<build> to repository.
func pushBundle(t testing.TB, repository, minor string, build int, key *ecdsa.PrivateKey, pkgs ...bundle.Package) string {
	t.Helper()
	name, err := bundle.Name(minor, build)
	must(t, err)
	b := bundle.Bundle{Name: name, KubernetesMinor: minor, Build: build, Packages: pkgs}
	s := bundle.Signed{Bundle: b}
	if key != nil {
		s, err = bundle.Sign(b, key)
		must(t, err)
	}
	opts, err := bundle.RemoteOptions(regConn)
	must(t, err)
	must(t, bundle.Push(context.Background(), regHost+"/"+repository, s, opts...))
	return name
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// newCluster creates a Flotilla Cluster name (Kubernetes minor) in a new namespace.
func newCluster(t testing.TB, name, minor string) *flotillav1.Cluster {
	t.Helper()
	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mgmt.NewNamespace(t)},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: minor,
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
	must(t, mgmt.Client.Create(context.Background(), c))
	return c
}
