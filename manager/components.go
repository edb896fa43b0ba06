package manager

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/addons"
	"github.com/flotilla-dev/flotilla/cluster"
	"github.com/flotilla-dev/flotilla/cluster/reconcilers/gitops"
	"github.com/flotilla-dev/flotilla/cluster/reconcilers/kubeconfigaccess"
	clusterwebhooks "github.com/flotilla-dev/flotilla/cluster/webhooks"
	"github.com/flotilla-dev/flotilla/infrastructure/inmemory"
	"github.com/flotilla-dev/flotilla/infrastructure/local"
	"github.com/flotilla-dev/flotilla/infrastructure/packet"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
	"github.com/flotilla-dev/flotilla/manager/capi"
	"github.com/flotilla-dev/flotilla/manager/kubeadm"
	"github.com/flotilla-dev/flotilla/packages"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// Component is a named set of reconcilers and webhooks that a manager can run. Setup registers
// them with mgr (SetupWithManager, ctrl.NewWebhookManagedBy); it runs before the manager starts.
//
// Each component runs as its own identity, named after it: mgr is a controller-runtime manager of
// the component's own, whose clients authenticate as that identity (see Identities), and whose
// requests the roles generated from the RBAC markers of the component's packages authorise
// (config/rbac/<name>, written by hack/rbacgen).
type Component struct {
	// Name selects the component with --components, and names its identity. Lower case, no
	// spaces.
	Name string
	// Setup registers the component's reconcilers and webhooks with mgr.
	Setup func(ctx context.Context, mgr ctrl.Manager, deps Deps) error
}

// Deps are what the manager hands every component.
type Deps struct {
	// ClusterCache gives cached, health-checked clients of workload clusters, built from each
	// cluster's <cluster>-kubeconfig Secret (labelled cluster.x-k8s.io/cluster-name), which it
	// reads as the manager's own identity (ManagerIdentity): components do not read those Secrets.
	ClusterCache clustercache.ClusterCache
	// Home is Flotilla's state directory ($FLOTILLA_HOME, default ~/.flotilla).
	Home string
	// BinRoot is the control plane binary cache ($FLOTILLA_BIN_CACHE, default
	// ~/.cache/flotilla/bin), holding one directory per Kubernetes version.
	BinRoot string
	// Helm is the one Helm engine of the process, shared by packages and addons: it serialises
	// the actions on each release and keeps one chart cache under Home.
	Helm *helm.Engine
	// Admins are the identities the webhooks trust with what only admins may do.
	Admins clusterwebhooks.Admins
	// Executable is the flotilla binary (Options.Executable).
	Executable string
}

// AllComponents selects every component.
const AllComponents = "all"

// Components returns every component a manager can run, in the order they are set up: Cluster
// API's, one per provider of the registry (infrastructure/providers), named after it, then the
// rest.
//
// A component is added here, with a Setup that adapts Deps to its reconcilers' fields; the
// reconciler packages do not import this package. A provider is added to the registry instead.
func Components() []Component {
	components := []Component{
		{Name: "capi", Setup: func(ctx context.Context, mgr ctrl.Manager, deps Deps) error {
			return capi.Setup(ctx, mgr, capi.Options{ClusterCache: deps.ClusterCache, SyncPeriod: syncPeriod})
		}},
	}
	for _, p := range providers.All() {
		components = append(components, Component{Name: p.Name, Setup: providerSetups[p.Name]})
	}
	return append(components,
		// Cluster API's in-memory provider, a provider Flotilla did not write, as its own process.
		Component{Name: "inmemory", Setup: func(ctx context.Context, mgr ctrl.Manager, deps Deps) error {
			return inmemory.Setup(ctx, mgr, inmemory.Options{Executable: deps.Executable, Home: deps.Home})
		}},
		Component{Name: "cluster", Setup: func(ctx context.Context, mgr ctrl.Manager, deps Deps) error {
			return cluster.Options{Admins: deps.Admins}.Setup(ctx, mgr)
		}},
		Component{Name: "gitops", Setup: func(ctx context.Context, mgr ctrl.Manager, deps Deps) error {
			return gitops.Setup(ctx, mgr, deps.Home)
		}},
		Component{Name: "kubeconfigaccess", Setup: func(_ context.Context, mgr ctrl.Manager, _ Deps) error {
			return (&kubeconfigaccess.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
		}},
		Component{Name: "addons", Setup: func(ctx context.Context, mgr ctrl.Manager, deps Deps) error {
			return addons.Setup(ctx, mgr, addons.Options{ClusterCache: deps.ClusterCache, Engine: deps.Helm})
		}},
		Component{Name: "packages", Setup: func(ctx context.Context, mgr ctrl.Manager, deps Deps) error {
			return packages.Setup(ctx, mgr, packages.Options{RESTConfigs: deps.ClusterCache, Installer: deps.Helm})
		}},
		Component{Name: "kubeadm", Setup: func(ctx context.Context, mgr ctrl.Manager, deps Deps) error {
			return kubeadm.Setup(ctx, mgr, kubeadm.Options{ClusterCache: deps.ClusterCache})
		}},
	)
}

// providerSetups registers the reconcilers of each provider of the registry, by its name
// (TestEveryProviderOfTheRegistryIsAComponent checks that none is missing).
var providerSetups = map[string]func(ctx context.Context, mgr ctrl.Manager, deps Deps) error{
	providers.LocalName: func(ctx context.Context, mgr ctrl.Manager, deps Deps) error {
		return local.Setup(ctx, mgr, local.Options{ClusterCache: deps.ClusterCache, Home: deps.Home, BinRoot: deps.BinRoot})
	},
	providers.PacketName: func(ctx context.Context, mgr ctrl.Manager, _ Deps) error {
		return packet.Setup(ctx, mgr, packet.Options{})
	},
}

// selectComponents returns the components of available named by names, in available's order.
// No names, or "all", selects every component.
func selectComponents(available []Component, names []string) ([]Component, error) {
	known := make([]string, 0, len(available))
	for _, c := range available {
		known = append(known, c.Name)
	}
	if len(names) == 0 || slices.Contains(names, AllComponents) {
		return available, nil
	}
	var unknown []string
	for _, n := range names {
		if !slices.Contains(known, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("unknown component(s) %s: known components are %s (or %q)",
			strings.Join(unknown, ", "), strings.Join(known, ", "), AllComponents)
	}
	var selected []Component
	for _, c := range available {
		if slices.Contains(names, c.Name) {
			selected = append(selected, c)
		}
	}
	return selected, nil
}

// managerID names the leader election Lease and the webhook configurations of a manager running
// components: "flotilla-manager" when it runs all of them, else with the sorted names appended,
// so that managers running different components neither compete nor overwrite each other.
func managerID(available, selected []Component) string {
	if len(selected) == len(available) {
		return "flotilla-manager"
	}
	names := make([]string, 0, len(selected))
	for _, c := range selected {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	return "flotilla-manager-" + strings.Join(names, "-")
}
