package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/scheme"
)

// DefaultKubernetesVersion is the version of the binaries an Environment runs by default.
const DefaultKubernetesVersion = "v1.36.3"

// Options configure an Environment.
type Options struct {
	// KubernetesVersion selects the binaries, e.g. "v1.36.3" (the default).
	KubernetesVersion string
	// BinRoot is the binary cache holding <version>/kube-apiserver and etcd; binaries.DefaultRoot()
	// ($FLOTILLA_BIN_CACHE or ~/.cache/flotilla/bin) when empty.
	BinRoot string
	// SkipCRDs starts the API server without Flotilla's and Cluster API's CRDs.
	SkipCRDs bool
	// Webhooks installs Flotilla's admission webhook configurations (config.FlotillaWebhooks),
	// calling https://127.0.0.1:<port>/<path> with a generated CA. Serve them with a webhook server
	// built from WebhookServerOptions.
	Webhooks bool
}

// Environment is a running kube-apiserver and etcd with the CRDs installed.
type Environment struct {
	// Config is an admin (system:masters) REST config for the API server.
	Config *rest.Config
	// Scheme holds client-go's, apiextensions', Cluster API's and Flotilla's types.
	Scheme *runtime.Scheme
	// Client is an uncached client using Scheme.
	Client ctrlclient.Client
	// Kubeconfig is Config as a kubeconfig file's contents, for processes a test starts.
	Kubeconfig []byte
	// BinaryDir is the directory of the kube-apiserver and etcd binaries in use.
	BinaryDir string

	env *envtest.Environment

	identitiesMu sync.Mutex
	identities   map[string]*rest.Config
}

// startTimeout bounds the start of etcd and kube-apiserver; generous because the machine may be
// busy with other test packages.
const startTimeout = 90 * time.Second

// Start starts etcd and kube-apiserver and installs the CRDs. Call Stop when done.
func Start(opts Options) (*Environment, error) {
	version := opts.KubernetesVersion
	if version == "" {
		version = DefaultKubernetesVersion
	}
	root := opts.BinRoot
	if root == "" {
		root = binaries.DefaultRoot()
	}
	set := binaries.Set{Dir: filepath.Join(root, version), Version: version}
	if err := set.Check(binaries.Etcd, binaries.KubeAPIServer); err != nil {
		return nil, fmt.Errorf("starting the test API server: %w", err)
	}

	s, err := scheme.New()
	if err != nil {
		return nil, err
	}

	env := &envtest.Environment{
		Scheme:                   s,
		BinaryAssetsDirectory:    set.Dir,
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	if opts.Webhooks {
		mutating, validating, err := config.WebhookConfigurations(config.FlotillaWebhooks)
		if err != nil {
			return nil, err
		}
		env.WebhookInstallOptions = envtest.WebhookInstallOptions{
			MutatingWebhooks:        mutating,
			ValidatingWebhooks:      validating,
			LocalServingHost:        "127.0.0.1",
			IgnoreSchemeConvertible: true,
		}
	}

	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("starting the test API server from %s: %w", set.Dir, err)
	}
	e := &Environment{Config: cfg, Kubeconfig: env.KubeConfig, Scheme: s, BinaryDir: set.Dir, env: env}
	e.Client, err = ctrlclient.New(cfg, ctrlclient.Options{Scheme: s})
	if err != nil {
		_ = e.Stop()
		return nil, fmt.Errorf("creating client: %w", err)
	}

	if !opts.SkipCRDs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := config.Install(ctx, e.Client); err != nil {
			_ = e.Stop()
			return nil, fmt.Errorf("installing CRDs: %w", err)
		}
	}
	return e, nil
}

// Stop stops kube-apiserver and etcd and removes their data.
func (e *Environment) Stop() error {
	if e == nil || e.env == nil {
		return nil
	}
	if err := e.env.Stop(); err != nil {
		return fmt.Errorf("stopping the test API server: %w", err)
	}
	return nil
}

// User is a user the API server authenticates by a client certificate it trusts; it has no
// permissions until a test binds some.
type User struct {
	// Config authenticates as the user.
	Config *rest.Config
	// Kubeconfig is Config as a kubeconfig file's contents, for code that takes a file.
	Kubeconfig []byte
}

// AddUser creates a client certificate for user name in groups, signed by a CA the API server
// trusts, and returns the user.
func (e *Environment) AddUser(name string, groups ...string) (*User, error) {
	u, err := e.env.AddUser(envtest.User{Name: name, Groups: groups}, e.Config)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	kubeconfig, err := u.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("writing the kubeconfig of user %s: %w", name, err)
	}
	return &User{Config: u.Config(), Kubeconfig: kubeconfig}, nil
}

// ManagerIdentities installs the roles of the manager's identities and their bindings
// (config.InstallManagerRBAC), and returns a REST config for each identity: a client certificate
// for its user and groups (config.IdentityUser, config.IdentityGroups), as a local management
// cluster gives the manager. A manager built with them (manager.New) runs each component under
// its own generated role, so a request its role does not allow fails the test. The
// certificates are made once per Environment.
func (e *Environment) ManagerIdentities(ctx context.Context) (func(identity string) (*rest.Config, error), error) {
	e.identitiesMu.Lock()
	defer e.identitiesMu.Unlock()
	if err := config.InstallManagerRBAC(ctx, e.Client); err != nil {
		return nil, fmt.Errorf("installing the manager's roles: %w", err)
	}
	if e.identities == nil {
		ids, err := config.ManagerIdentities()
		if err != nil {
			return nil, err
		}
		e.identities = map[string]*rest.Config{}
		for _, id := range ids {
			u, err := e.AddUser(config.IdentityUser(id), config.IdentityGroups()...)
			if err != nil {
				return nil, err
			}
			e.identities[id] = u.Config
		}
	}
	identities := e.identities
	return func(identity string) (*rest.Config, error) {
		cfg, ok := identities[identity]
		if !ok {
			return nil, fmt.Errorf("no generated roles for identity %s (config/rbac/%s)", identity, identity)
		}
		return rest.CopyConfig(cfg), nil
	}, nil
}

// AddClusterCreator adds user name (in groups) as AddUser does, and binds it to the ClusterRole
// flotilla-cluster-creator in namespace with a RoleBinding, as docs/cluster-creator-role.md says
// to: a tenant. It installs the role first when missing.
func (e *Environment) AddClusterCreator(namespace, name string, groups ...string) (*User, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := config.InstallClusterCreatorRBAC(ctx, e.Client); err != nil {
		return nil, fmt.Errorf("installing the cluster creator role: %w", err)
	}
	binding := config.ClusterCreatorBinding(namespace, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name})
	if err := e.Client.Create(ctx, binding); err != nil {
		return nil, fmt.Errorf("binding %s to the cluster creator role in %s: %w", name, namespace, err)
	}
	return e.AddUser(name, groups...)
}

// WebhookServerOptions returns the options of a webhook server that serves the webhook
// configurations installed with Options.Webhooks: host, port and the directory of its certificate.
func (e *Environment) WebhookServerOptions() webhook.Options {
	o := e.env.WebhookInstallOptions
	return webhook.Options{Host: o.LocalServingHost, Port: o.LocalServingPort, CertDir: o.LocalServingCertDir}
}

// Run starts an Environment, hands it to started, runs the package's tests and stops it. It
// returns the exit code for os.Exit; when the Environment cannot start (binaries missing, say) it
// prints why and how to fix it, and returns 1.
func Run(m *testing.M, opts Options, started func(*Environment)) int {
	e, err := Start(opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	started(e)
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// NewNamespace creates a namespace with a generated name for one test and deletes it when the
// test ends. (Without kube-controller-manager the namespace stays Terminating; its name is never
// reused.)
func (e *Environment) NewNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Client.Create(ctx, ns); err != nil {
		t.Fatalf("creating test namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := e.Client.Delete(ctx, ns); err != nil && !errors.Is(err, context.Canceled) && ctrlclient.IgnoreNotFound(err) != nil {
			t.Errorf("deleting test namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}
