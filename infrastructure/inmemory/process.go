package inmemory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/capifeatures"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/setup"
	"sigs.k8s.io/cluster-api/test/infrastructure/container"
	devv1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
	devcontrollers "sigs.k8s.io/cluster-api/test/infrastructure/docker/controllers"
	cloudv1 "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/cloud/api/v1alpha1"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	inmemoryserver "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/pkg/scheme"
)

// ProcessCommand is the first argument of the provider process: `flotilla inmemory-provider`
// (a hidden command), or a test binary whose TestMain hands it to RunProcessIfRequested.
const ProcessCommand = "inmemory-provider"

// hostNetworkFD is the file descriptor on which the provider process finds the host's network
// namespace, open: its parent passes it as the first extra file.
const hostNetworkFD = 3

// processConfig is what the provider process reads on its standard input, as JSON. The
// credentials of the management cluster travel this way, never through a file or the command
// line.
type processConfig struct {
	// Management is how to reach the management cluster (from the host's network namespace).
	Management restConfig `json:"management"`
}

// restConfig is the part of a rest.Config the provider process needs, with files read.
type restConfig struct {
	Host        string `json:"host"`
	ServerName  string `json:"serverName,omitempty"`
	CAData      []byte `json:"caData,omitempty"`
	CertData    []byte `json:"certData,omitempty"`
	KeyData     []byte `json:"keyData,omitempty"`
	BearerToken string `json:"bearerToken,omitempty"`
}

// restConfigOf copies what the provider process needs of cfg, reading the files it names. A
// config that authenticates through an exec plugin or an auth provider is refused: its process
// would not have them.
func restConfigOf(cfg *rest.Config) (restConfig, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.ExecProvider != nil || cfg.AuthProvider != nil {
		return restConfig{}, errors.New("the management cluster's kubeconfig authenticates through a plugin, which the in-memory provider cannot use: use a client certificate or a token")
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return restConfig{}, fmt.Errorf("reading the management cluster's certificates: %w", err)
	}
	token := cfg.BearerToken
	if token == "" && cfg.BearerTokenFile != "" {
		data, err := os.ReadFile(cfg.BearerTokenFile)
		if err != nil {
			return restConfig{}, fmt.Errorf("reading the management cluster's token: %w", err)
		}
		token = string(data)
	}
	return restConfig{Host: cfg.Host, ServerName: cfg.ServerName, CAData: cfg.CAData, CertData: cfg.CertData, KeyData: cfg.KeyData, BearerToken: token}, nil
}

// config turns rc back into a rest.Config that dials through dial.
func (rc restConfig) config(dial func(ctx context.Context, network, address string) (net.Conn, error)) *rest.Config {
	return &rest.Config{
		Host:            rc.Host,
		BearerToken:     rc.BearerToken,
		TLSClientConfig: rest.TLSClientConfig{ServerName: rc.ServerName, CAData: rc.CAData, CertData: rc.CertData, KeyData: rc.KeyData},
		Dial:            dial,
		// As the manager's own clients (manager.managerRESTConfig): the API server's priority
		// and fairness bounds the requests, not the ctrlclient.
		QPS:       -1,
		UserAgent: "flotilla-inmemory-provider",
	}
}

// Settings of the provider process.
const (
	syncPeriod = 10 * time.Minute
	// concurrency of the DevCluster and DevMachine reconcilers.
	devConcurrency = 10
	// debugPort is the in-memory server's debug endpoint, inside the process's own network
	// namespace.
	debugPort = inmemoryserver.DefaultDebugPort
)

// RunProcessIfRequested runs the provider process, logging to stderr, and exits when the program
// was started as one (os.Args[1] is ProcessCommand), and returns otherwise. The flotilla binary
// calls it first thing in main, and so do the TestMain of test binaries that run the "inmemory"
// component.
func RunProcessIfRequested() {
	if len(os.Args) < 2 || os.Args[1] != ProcessCommand {
		return
	}
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(os.Stderr)))
	ctrl.SetLogger(log)
	klog.SetLogger(log)
	ctx := ctrl.LoggerInto(ctrl.SetupSignalHandler(), log)
	if err := RunProcess(ctx, os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "in-memory provider: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// RunProcess is the provider process: it runs Cluster API's in-memory provider (the
// DevCluster, DevMachine and DevMachineTemplate reconcilers with their in-memory backend) against
// the management cluster whose credentials it reads from stdin (processConfig), until ctx ends.
// It must run in a network namespace of its own, with the host's open at file descriptor 3 (the
// component starts it so).
func RunProcess(ctx context.Context, stdin io.Reader) error {
	host := &hostNetwork{ns: os.NewFile(hostNetworkFD, "host-network-namespace")}
	if host.ns == nil {
		return errors.New("the host's network namespace is not open at file descriptor 3: the in-memory provider is started by the manager's inmemory component")
	}
	own, err := ownNetworkNamespace(host.ns)
	if err != nil {
		return err
	}
	if !own {
		return errors.New("refusing to run in the host's network namespace: Cluster API's in-memory API server listens on every address of its namespace")
	}
	if err := loopbackUp(); err != nil {
		return err
	}
	var cfg processConfig
	if err := json.NewDecoder(stdin).Decode(&cfg); err != nil {
		return fmt.Errorf("reading the configuration on stdin: %w", err)
	}

	if err := capifeatures.Set(); err != nil {
		return err
	}
	log := ctrl.LoggerFrom(ctx).WithName("inmemory-provider")
	ctx = ctrl.LoggerInto(ctx, log)
	s, err := providerScheme()
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg.Management.config(host.dial), ctrl.Options{
		Scheme:                 s,
		Cache:                  setup.ManagerCacheOptions(s, "flotilla-inmemory-provider", "", syncPeriod),
		Client:                 setup.ManagerClientOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 log,
	})
	if err != nil {
		return fmt.Errorf("creating the provider's manager: %w", err)
	}

	mux, err := newMux(ctx, mgr.GetAPIReader(), host)
	if err != nil {
		return err
	}
	if err := setupReconcilers(ctx, mgr, mux); err != nil {
		return err
	}
	if err := mgr.Add(newGateway(mux.mux, mux.memory, mgr.GetAPIReader(), host)); err != nil {
		return fmt.Errorf("adding the gateway: %w", err)
	}
	log.Info("Starting the in-memory provider", "ports", fmt.Sprintf("%d-%d", mux.minPort, mux.maxPort))
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running the in-memory provider: %w", err)
	}
	return nil
}

// providerScheme holds the types the provider's reconcilers read and write in the management
// cluster: Flotilla's scheme (client-go, Cluster API core and kubeadm...) and the Dev types.
func providerScheme() (*runtime.Scheme, error) {
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	if err := devv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("building scheme: %w", err)
	}
	return s, nil
}

// memoryScheme holds what the in-memory workload clusters store: the kinds Cluster API's
// in-memory API server serves, and its cloud machines.
func memoryScheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		cloudv1.AddToScheme, corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme,
		storagev1.AddToScheme, apiextensionsv1.AddToScheme, policyv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("building the in-memory scheme: %w", err)
		}
	}
	return s, nil
}

// setupReconcilers registers Cluster API's DevCluster, DevMachine and DevMachineTemplate
// reconcilers. The DevMachine reconciler takes a container runtime and a cluster cache for its
// Docker backend, which the in-memory backend never uses: it gets the package's runtime that
// runs no container, and a cluster cache that connects to no cluster.
func setupReconcilers(ctx context.Context, mgr ctrl.Manager, m *memoryMux) error {
	noContainers, err := container.NewFakeClient()
	if err != nil {
		return err
	}
	secretClient, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		return fmt.Errorf("creating the secret caching client: %w", err)
	}
	noClusters, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient:  secretClient,
		Cache:         setup.ClusterCacheCacheOptions(),
		Client:        setup.ClusterCacheClientOptions("flotilla-inmemory-provider", 20, 30),
		ClusterFilter: func(*clusterv1.Cluster) bool { return false },
	}, controller.Options{MaxConcurrentReconciles: 1})
	if err != nil {
		return fmt.Errorf("setting up the cluster cache: %w", err)
	}
	options := controller.Options{MaxConcurrentReconciles: devConcurrency}
	reconcilers := []struct {
		name  string
		setup func() error
	}{
		{"DevCluster", func() error {
			return (&devcontrollers.DevClusterReconciler{Client: mgr.GetClient(), ContainerRuntime: noContainers,
				InMemoryManager: m.memory, APIServerMux: m.mux}).SetupWithManager(ctx, mgr, options)
		}},
		{"DevMachine", func() error {
			return (&devcontrollers.DevMachineReconciler{Client: mgr.GetClient(), ContainerRuntime: noContainers, ClusterCache: noClusters,
				InMemoryManager: m.memory, APIServerMux: m.mux}).SetupWithManager(ctx, mgr, options)
		}},
		{"DevMachineTemplate", func() error {
			return (&devcontrollers.DevMachineTemplateReconciler{Client: mgr.GetClient(), ContainerRuntime: noContainers}).
				SetupWithManager(ctx, mgr, options)
		}},
	}
	for _, r := range reconcilers {
		if err := r.setup(); err != nil {
			return fmt.Errorf("setting up the %s controller: %w", r.name, err)
		}
	}
	return nil
}

// memoryMux is the in-memory backend: the store of every workload cluster, and the server of
// their API servers and etcd members.
type memoryMux struct {
	memory           inmemoryruntime.Manager
	mux              *inmemoryserver.WorkloadClustersMux
	minPort, maxPort int32
}

// newMux starts the in-memory store and the server of the workload clusters, on ports of a range
// free on the host (ports.go). The listeners of existing clusters are initialized on the ports
// their DevClusters record before any reconciler runs, so a restarted provider gives no new
// cluster a port an existing one has.
func newMux(ctx context.Context, reader ctrlclient.Reader, host *hostNetwork) (*memoryMux, error) {
	s, err := memoryScheme()
	if err != nil {
		return nil, err
	}
	existing, err := existingEndpoints(ctx, reader)
	if err != nil {
		return nil, err
	}
	minPort, maxPort, err := choosePorts(existing, host)
	if err != nil {
		return nil, err
	}
	memory := inmemoryruntime.NewManager(s)
	if err := memory.Start(ctx); err != nil {
		return nil, fmt.Errorf("starting the in-memory store: %w", err)
	}
	mux, err := inmemoryserver.NewWorkloadClustersMux(memory, "127.0.0.1",
		inmemoryserver.CustomPorts{MinPort: minPort, MaxPort: maxPort, DebugPort: debugPort})
	if err != nil {
		return nil, fmt.Errorf("starting the in-memory API server: %w", err)
	}
	for name, port := range existing {
		if _, err := mux.InitWorkloadClusterListener(name, port); err != nil {
			return nil, fmt.Errorf("restoring the endpoint of %s: %w", name, err)
		}
	}
	return &memoryMux{memory: memory, mux: mux, minPort: minPort, maxPort: maxPort}, nil
}

// existingEndpoints are the ports of the endpoints of the DevClusters that have one, by the name
// of their listener (namespace/name of their CAPI Cluster).
func existingEndpoints(ctx context.Context, reader ctrlclient.Reader) (map[string]int32, error) {
	dcs := &devv1.DevClusterList{}
	if err := reader.List(ctx, dcs); err != nil {
		return nil, fmt.Errorf("listing DevClusters: %w", err)
	}
	out := map[string]int32{}
	for _, dc := range dcs.Items {
		cluster := dc.Labels[clusterv1.ClusterNameLabel]
		if dc.Spec.Backend.InMemory == nil || cluster == "" || dc.Spec.ControlPlaneEndpoint.Port == 0 {
			continue
		}
		out[dc.Namespace+"/"+cluster] = dc.Spec.ControlPlaneEndpoint.Port
	}
	return out, nil
}
