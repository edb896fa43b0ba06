package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	capiaddonsv1beta1 "sigs.k8s.io/cluster-api/api/addons/v1beta1"                        //nolint:staticcheck // CAPI's webhooks convert v1beta1 <-> v1beta2
	bootstrapv1beta1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta1"              //nolint:staticcheck // CAPI's webhooks convert v1beta1 <-> v1beta2
	kubeadmcontrolplanev1beta1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta1" //nolint:staticcheck // CAPI's webhooks convert v1beta1 <-> v1beta2
	clusterv1beta1 "sigs.k8s.io/cluster-api/api/core/v1beta1"                             //nolint:staticcheck // CAPI's webhooks convert v1beta1 <-> v1beta2
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/controllers/remote"
	"sigs.k8s.io/cluster-api/core/setup"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/flotilla-dev/flotilla/addons/values"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	clusterwebhooks "github.com/flotilla-dev/flotilla/cluster/webhooks"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/scheme"
	"github.com/flotilla-dev/flotilla/pkg/version"
)

// Namespace is where Flotilla's manager keeps its state: the leader election Lease, the version
// ConfigMap, infrastructure credentials.
const Namespace = flotillav1.SystemNamespace

// fieldOwner is the server-side apply field manager of what the manager applies.
const fieldOwner = "flotilla-manager"

// Settings of the manager's caches and clients.
const (
	syncPeriod = 10 * time.Minute
	// Queries per second to workload clusters, per cluster (Cluster API's defaults).
	clusterCacheQPS   = 20
	clusterCacheBurst = 30
)

// Options configure a Manager. The zero value runs every component with loopback defaults.
type Options struct {
	// Components names the components to run; empty or "all" runs every one of Components().
	Components []string
	// HealthProbeBindAddress serves /healthz and /readyz; DefaultHealthProbeBindAddress (a port
	// the kernel picks: ProbeAddress) when empty, "0" disables.
	HealthProbeBindAddress string
	// MetricsBindAddress serves Prometheus metrics at https://<address>/metrics to clients the
	// API server authorizes (serving.go); DefaultMetricsBindAddress (a port the kernel picks:
	// MetricsAddress) when empty, "0" disables.
	MetricsBindAddress string
	// WebhookPort is the port of the webhook server on 127.0.0.1; 0 picks a free one at start.
	WebhookPort int
	// WebhookCertDir receives the serving certificate generated at start; a new temporary
	// directory, removed when Run returns, when empty.
	WebhookCertDir string
	// LeaderElection makes the manager take a Lease in flotilla-system before running its
	// controllers. Webhooks are served by every replica.
	LeaderElection bool
	// Home is Flotilla's state directory; $FLOTILLA_HOME or ~/.flotilla when empty.
	Home string
	// BinRoot is the control plane binary cache; binaries.DefaultRoot() when empty.
	BinRoot string
	// Executable is the flotilla binary, which the "inmemory" component runs Cluster API's
	// in-memory provider with (its hidden inmemory-provider command); empty, it runs none.
	Executable string
	// Version is recorded in the ConfigMap flotilla-system/flotilla-version.
	Version string
	// SkipControllerNameValidation lets one process run several managers with the same
	// controllers (tests do); controller names are otherwise unique per process.
	SkipControllerNameValidation bool
	// Admins are the users and groups the webhooks trust with what only admins may do (create
	// a management cluster, name or change a cluster's management cluster, serve a local control
	// plane off loopback); webhooks.DefaultAdmins (groups system:masters and flotilla-admins)
	// when zero. See docs/security.md.
	Admins clusterwebhooks.Admins
}

// ManagerIdentity is the identity of what every manager runs besides its components: the cluster
// cache (which reads the <cluster>-kubeconfig Secrets), the endpoint gate, the registration of
// webhook configurations and the version record. Components never run as it: none of those
// that run Helm may register webhooks.
const ManagerIdentity = "manager"

// Identities returns the REST config that an identity of the manager authenticates with:
// ManagerIdentity, or a component's name. Each identity gets a controller-runtime manager of its
// own (clients, caches, leader election), in one process.
type Identities func(identity string) (*rest.Config, error)

// OneIdentity runs every identity with cfg: one ServiceAccount bound to every role, or an
// admin's kubeconfig when debugging by hand. Local management clusters run each identity with a
// certificate of its own instead.
func OneIdentity(cfg *rest.Config) Identities {
	return func(string) (*rest.Config, error) { return cfg, nil }
}

// RBAC of the manager's own identity (ManagerIdentity), besides the endpoint gate's
// (endpointgate.go), the webhook registrar's (webhooks.go) and the version record's
// (version.go): the cluster cache watches Cluster API Clusters and reads their kubeconfig
// Secrets, in any namespace a Cluster may live in, through a cache of the Secrets labelled with
// a cluster name (Kubernetes cannot grant by label: the rule covers every Secret, and only
// reads).
//
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// RBAC of leader election, which every identity takes part in with a Lease of its own in
// flotilla-system when the manager runs with LeaderElection: a Role of its own, bound to every
// identity, and recording who leads in core events (controller-runtime's leader elector uses the
// core event recorder).
//
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=flotilla-system,roleName=flotilla-leader-election,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups="",namespace=flotilla-system,roleName=flotilla-leader-election,resources=events,verbs=create;patch

// Manager runs Flotilla's components in one process: one controller-runtime manager for its own
// identity (ManagerIdentity), which serves the webhooks, probes and metrics of all, and one for
// each component, under that component's identity.
type Manager struct {
	mgr          ctrl.Manager
	clusterCache clustercache.ClusterCache
	registrar    *webhookRegistrar
	components   []Component
	// running are the managers of the components, by component, in setup order.
	running      []*componentManager
	id           string
	version      string
	webhookURL   string
	certDir      string
	removeCerts  bool
	directClient ctrlclient.Client
	// readyChecks are the checks of the readiness probe (/readyz), which Ready runs too.
	readyChecks []healthz.Checker
	// probeListener and metricsListener are where the probes and metrics are served (nil:
	// disabled), opened in New (serving.go).
	probeListener   net.Listener
	metricsListener net.Listener
	// stopped ends when the manager has stopped (cleanup): the components' cluster sources
	// read until then (clusterSources).
	stopped     context.Context
	markStopped context.CancelFunc
}

// New builds a manager for the cluster that identities authenticate with, one identity per
// component and ManagerIdentity, and sets up the selected components; Run starts it. New does not
// contact the API server. When it fails, it leaves nothing behind.
func New(ctx context.Context, identities Identities, opts Options) (_ *Manager, err error) {
	available := Components()
	selected, err := selectComponents(available, opts.Components)
	if err != nil {
		return nil, err
	}
	m := &Manager{components: selected, id: managerID(available, selected), version: opts.Version}
	m.stopped, m.markStopped = context.WithCancel(context.Background())
	if m.version == "" {
		m.version = version.Unknown
	}
	defer func() {
		if err != nil {
			m.cleanup()
		}
	}()
	if err := m.listenProbesAndMetrics(opts); err != nil {
		return nil, err
	}
	deps := newDeps(opts)
	s, err := newScheme()
	if err != nil {
		return nil, err
	}
	server, caBundle, err := m.newWebhookServer(opts)
	if err != nil {
		return nil, err
	}
	restConfig, err := identityRESTConfig(identities, ManagerIdentity, m.id)
	if err != nil {
		return nil, err
	}
	m.mgr, err = ctrl.NewManager(restConfig, managerOptions(opts, m.id, s, server))
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	m.directClient, err = ctrlclient.New(restConfig, ctrlclient.Options{Scheme: s, HTTPClient: m.mgr.GetHTTPClient()})
	if err != nil {
		return nil, fmt.Errorf("creating client: %w", err)
	}
	m.registrar = &webhookRegistrar{client: m.directClient, server: server, name: m.id, baseURL: m.webhookURL, caBundle: caBundle}
	if err := m.setup(ctx); err != nil {
		return nil, err
	}
	if err := m.serveMetrics(ctx, restConfig); err != nil {
		return nil, err
	}
	deps.ClusterCache = clusterSources{ClusterCache: m.clusterCache, stopped: m.stopped}
	for _, c := range m.components {
		if err := m.setupComponent(ctx, c, identities, opts, s, server, deps); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// identityRESTConfig is the REST config of identity, for the clients of manager id.
func identityRESTConfig(identities Identities, identity, id string) (*rest.Config, error) {
	cfg, err := identities(identity)
	if err != nil {
		return nil, fmt.Errorf("loading the credentials of identity %s: %w", identity, err)
	}
	if cfg == nil {
		return nil, fmt.Errorf("no credentials for identity %s", identity)
	}
	return managerRESTConfig(cfg, id), nil
}

// newDeps fills in what the components share from opts and the defaults.
func newDeps(opts Options) Deps {
	deps := Deps{Home: opts.Home, BinRoot: opts.BinRoot, Admins: opts.Admins, Executable: opts.Executable}
	if deps.Home == "" {
		deps.Home = controlplane.HomeDir()
	}
	if deps.BinRoot == "" {
		deps.BinRoot = binaries.DefaultRoot()
	}
	// Charts' templates render in bounded workers, as values templates do.
	deps.Helm = &helm.Engine{ChartCache: helm.ChartCacheDir(deps.Home), Renderer: values.ChartRenderer{}}
	reportEngine(deps.Helm)
	return deps
}

// newScheme is the manager's scheme: Flotilla's, with Cluster API's v1beta1 types and its
// runtime extension types besides.
func newScheme() (*runtime.Scheme, error) {
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	// Cluster API's webhooks (the core's and the kubeadm providers') register v1beta1 <-> v1beta2
	// converters, which need both versions in the scheme; the CRDs serve only v1beta2, so the
	// converters are never called.
	// The ClusterClass reconciler watches ExtensionConfigs (runtime extensions that discover
	// variables), of which Flotilla has none.
	for _, add := range []func(*runtime.Scheme) error{
		clusterv1beta1.AddToScheme, capiaddonsv1beta1.AddToScheme, bootstrapv1beta1.AddToScheme, kubeadmcontrolplanev1beta1.AddToScheme,
		runtimev1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building scheme: %w", err)
		}
	}
	return s, nil
}

// newWebhookServer chooses the webhook port and writes a serving certificate for it, into
// opts.WebhookCertDir or a temporary directory that cleanup removes, and returns the server with
// the certificate's CA bundle.
func (m *Manager) newWebhookServer(opts Options) (*recordingServer, []byte, error) {
	port := opts.WebhookPort
	if port == 0 {
		p, err := controlplane.PickPort(webhookHost)
		if err != nil {
			return nil, nil, fmt.Errorf("choosing the webhook port: %w", err)
		}
		port = int(p)
	}
	m.webhookURL = webhookBaseURL(port)
	m.certDir = opts.WebhookCertDir
	if m.certDir == "" {
		dir, err := os.MkdirTemp("", "flotilla-webhook-certs-")
		if err != nil {
			return nil, nil, fmt.Errorf("creating webhook certificate directory: %w", err)
		}
		m.certDir, m.removeCerts = dir, true
	}
	caBundle, err := writeServingCert(m.certDir)
	if err != nil {
		return nil, nil, err
	}
	server := newRecordingServer(webhook.NewServer(webhook.Options{
		Host:     webhookHost,
		Port:     port,
		CertDir:  m.certDir,
		CertName: webhookCertName,
		KeyName:  webhookKeyName,
	}))
	return server, caBundle, nil
}

// managerRESTConfig is a copy of restConfig for the manager's clients: named after the manager
// (id) in the API server's logs and audit, and not rate-limited on the client side.
func managerRESTConfig(restConfig *rest.Config, id string) *rest.Config {
	restConfig = rest.CopyConfig(restConfig)
	restConfig.UserAgent = remote.DefaultClusterAPIUserAgent(id)
	if restConfig.QPS == 0 {
		// Left at zero, client-go limits every client of the manager to 5 requests/s with bursts
		// of 10, shared by all controllers: each step of a cluster's creation then waits its
		// turn. Like controller-runtime's GetConfig, leave the bounding to the API server's
		// priority and fairness.
		restConfig.QPS = -1
	}
	return restConfig
}

// managerOptions are the options of the controller-runtime manager of ManagerIdentity, which
// serves the webhooks, probes and metrics of every identity of the process (controller-runtime's
// metrics registry is one per process).
func managerOptions(opts Options, id string, s *runtime.Scheme, server webhook.Server) ctrl.Options {
	return ctrl.Options{
		Scheme: s,
		// Secrets are cached only when labelled with a cluster name (kubeconfig and CA Secrets);
		// the manager's client reads Secrets and ConfigMaps from the API server.
		Cache:  setup.ManagerCacheOptions(s, informerName(id), "", syncPeriod),
		Client: setup.ManagerClientOptions(),
		Controller: ctrlconfig.Controller{
			SkipNameValidation: ptr.To(opts.SkipControllerNameValidation),
		},
		// The manager serves its probes and metrics itself (serving.go).
		HealthProbeBindAddress:        "0",
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		LeaderElection:                opts.LeaderElection,
		LeaderElectionID:              id,
		LeaderElectionNamespace:       Namespace,
		LeaderElectionResourceLock:    resourcelock.LeasesResourceLock,
		LeaderElectionReleaseOnCancel: true,
		WebhookServer:                 server,
	}
}

// setup adds the probes, the cluster cache, the endpoint gate and the webhook registrar to the
// manager of ManagerIdentity.
func (m *Manager) setup(ctx context.Context) error {
	mgr := m.mgr
	healthChecks := []check{
		{"ping", healthz.Ping},
		{"webhook-server", mgr.GetWebhookServer().StartedChecker()},
	}
	readyChecks := []check{
		{"webhook-server", mgr.GetWebhookServer().StartedChecker()},
		{"webhook-configuration", m.registrar.checker},
		{"components", func(*http.Request) error { return m.componentsSynced() }},
	}
	for _, c := range readyChecks {
		m.readyChecks = append(m.readyChecks, c.checker)
	}
	if err := m.serveProbes(healthChecks, readyChecks); err != nil {
		return fmt.Errorf("adding the probes: %w", err)
	}

	secretCachingClient, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		return fmt.Errorf("creating secret caching client: %w", err)
	}
	m.clusterCache, err = clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient:  secretCachingClient,
		Cache:         setup.ClusterCacheCacheOptions(),
		Client:        setup.ClusterCacheClientOptions(m.id, clusterCacheQPS, clusterCacheBurst),
		ClusterFilter: func(c *clusterv1.Cluster) bool { return !gated(c) }, // endpointgate.go
	}, controller.Options{
		MaxConcurrentReconciles: 10,
		// Every replica connects: the components that lead their own election, on whichever
		// replica, reach workload clusters through it.
		NeedLeaderElection: ptr.To(false),
	})
	if err != nil {
		return fmt.Errorf("setting up the cluster cache: %w", err)
	}
	if err := setupEndpointGate(mgr); err != nil {
		return err
	}

	if err := mgr.Add(m.registrar); err != nil {
		return fmt.Errorf("adding webhook registrar: %w", err)
	}
	return nil
}

// Run waits for the namespaces flotilla-system and kube-public, records the manager's version,
// and runs the manager until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	defer m.cleanup()
	log := ctrl.LoggerFrom(ctx)
	if err := waitForAPIServer(ctx, func() error { return namespacesExist(ctx, m.directClient) }); err != nil {
		return err
	}
	if err := version.Record(ctx, m.directClient, fieldOwner, m.version); err != nil {
		return err
	}
	names := make([]string, 0, len(m.components))
	for _, c := range m.components {
		names = append(names, c.Name)
	}
	log.Info("Starting manager", "id", m.id, "version", m.version, "components", names, "webhookURL", m.webhookURL,
		"probes", m.ProbeAddress(), "metrics", m.MetricsAddress())
	if err := m.mgr.Start(ctx); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// Ready returns nil when the manager is ready, as its readiness probe (/readyz) says: its
// webhook server listens, its webhook configurations are registered with the API server, and
// the caches of every component have synced.
func (m *Manager) Ready() error {
	for _, check := range m.readyChecks {
		if err := check(nil); err != nil {
			return err
		}
	}
	return nil
}

// apiServerWait bounds how long Run waits for an API server that does not answer.
const apiServerWait = 2 * time.Minute

// waitForAPIServer runs first until it returns anything but a failure to reach the API server,
// an answer that it cannot serve yet (500, 503, 504, 429: a server still starting) or a missing
// namespace (errNamespaceMissing), for up to apiServerWait. After a machine restart the
// supervisor of a local management cluster starts its API server and its manager at once: the
// manager waits rather than exits (and is started again with a back-off).
func waitForAPIServer(ctx context.Context, first func() error) error {
	ctx, cancel := context.WithTimeout(ctx, apiServerWait)
	defer cancel()
	logged := false
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		err := first()
		var status apierrors.APIStatus
		if err == nil || (errors.As(err, &status) && !errors.Is(err, errNamespaceMissing) && !notServingYet(err)) {
			return err
		}
		if !logged {
			ctrl.LoggerFrom(ctx).Info("Waiting for the API server", "reason", err.Error())
			logged = true
		}
		select {
		case <-ctx.Done():
			if errors.Is(err, errNamespaceMissing) {
				return fmt.Errorf("waited %s: %w", apiServerWait, err)
			}
			return fmt.Errorf("the API server did not answer within %s: %w", apiServerWait, err)
		case <-time.After(delay):
		}
	}
}

// notServingYet reports whether err is an API server's answer that it cannot serve the request
// now, rather than a refusal of it.
func notServingYet(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)
}

// Manager returns the controller-runtime manager of ManagerIdentity, which runs the components'
// managers: tests wait for it to be elected and synced (the components' caches: Ready).
func (m *Manager) Manager() ctrl.Manager { return m.mgr }

// ClusterCache returns the cluster cache handed to the components.
func (m *Manager) ClusterCache() clustercache.ClusterCache { return m.clusterCache }

// ID names the manager's leader election Lease and webhook configurations.
func (m *Manager) ID() string { return m.id }

// WebhookURL is the https://127.0.0.1:<port> prefix the API server calls webhooks at.
func (m *Manager) WebhookURL() string { return m.webhookURL }

// cleanup ends the components' cluster sources, and removes the webhook certificates the
// manager generated.
func (m *Manager) cleanup() {
	m.markStopped()
	for _, l := range []net.Listener{m.probeListener, m.metricsListener} {
		if l != nil {
			_ = l.Close() // closed already when served
		}
	}
	if m.removeCerts && m.certDir != "" {
		_ = os.RemoveAll(m.certDir)
	}
}

// managersInProcess counts the managers created by this process.
var managersInProcess atomic.Int32

// informerName names the informers of a manager's cache in metrics. Cluster API's informer
// factory panics when a name is reserved twice in one process, which happens when a process (a
// test, say) creates a second manager; the second and later ones get a numbered name.
func informerName(id string) string {
	if n := managersInProcess.Add(1); n > 1 {
		return fmt.Sprintf("%s-%d", id, n)
	}
	return id
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
