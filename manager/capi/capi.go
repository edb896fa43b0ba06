package capi

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/capifeatures"

	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinehealthcheck"
	"sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	"sigs.k8s.io/cluster-api/util/index"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// Settings of the Cluster API core reconcilers: Cluster API's own defaults (core/main.go), with
// concurrency sized for one machine.
const (
	// remoteConnectionGracePeriod: after this long without a successful health probe of a
	// workload cluster, its Cluster's RemoteConnectionProbe condition turns False.
	remoteConnectionGracePeriod = 50 * time.Second
	// RemoteConditionsGracePeriod: after this long, remote conditions (NodeHealthy...) turn
	// Unknown. Cluster API requires at least 2m and more than remoteConnectionGracePeriod.
	RemoteConditionsGracePeriod = 5 * time.Minute
	concurrency                 = 10
)

// RBAC that Cluster API's core reconcilers need on Flotilla's provider kinds, besides the rules
// of their own markers (generated into the same role, see hack/rbacgen). Cluster API names the
// provider groups it knows by wildcard (infrastructure.cluster.x-k8s.io); a provider in another
// group ships these rules itself. The Cluster and Machine reconcilers read and patch the
// infrastructure cluster, control plane and infrastructure machine they reference (owner
// references, labels, pause) and delete them with their owners; the MachineSet reconciler
// creates each machine from its LocalMachineTemplate or PacketMachineTemplate, and sets the
// template's owner reference. The configuration kinds of those groups (LocalDatacenterConfig,
// PacketMachineConfig, identities, ...) are not listed: Cluster API never references them.
//
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=localclusters;packetclusters,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=controlplane.flotilla.dev,resources=localcontrolplanes,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=localmachines;packetmachines,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=localmachinetemplates;packetmachinetemplates,verbs=get;list;watch;update;patch

// RBAC for MachinePools, which Flotilla neither makes nor reconciles: Cluster API's MachinePool
// feature gate is on by default, so the Cluster reconciler counts a Cluster's MachinePools among
// its descendants and the default indexes index them by Node.
//
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinepools,verbs=get;list;watch

// Options configure the "capi" component.
type Options struct {
	// ClusterCache reaches workload clusters (required).
	ClusterCache clustercache.ClusterCache
	// SyncPeriod is how often the caches the component makes itself resync (the
	// ClusterResourceSet reconciler's metadata cache of Secrets), as the manager's do.
	SyncPeriod time.Duration
}

// Setup registers Cluster API's core reconcilers and their admission webhooks with mgr:
// Cluster, Machine, MachineSet, MachineDeployment and MachineHealthCheck, plus the
// MachineDrainRule webhook (the Machine reconciler reads drain rules when it drains a Node), the
// field indexes those reconcilers look Machines up by, and what ClusterClass clusters and
// ClusterResourceSets need (topology.go).
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.ClusterCache == nil {
		return errors.New("setting up Cluster API: ClusterCache is required")
	}
	// The gate first: with it on, the default indexes include Clusters by ClusterClass, which
	// Cluster API's ClusterClass webhook lists by (on every update of a class, as clusterctl
	// move's pause makes).
	if err := capifeatures.Set(); err != nil {
		return err
	}
	if err := index.AddDefaultIndexes(ctx, mgr); err != nil {
		return fmt.Errorf("adding Cluster API indexes: %w", err)
	}
	options := controller.Options{MaxConcurrentReconciles: concurrency}

	reconcilers := []struct {
		name  string
		setup func() error
	}{
		{"Cluster", func() error {
			return (&cluster.Reconciler{
				Client:                      mgr.GetClient(),
				APIReader:                   mgr.GetAPIReader(),
				ClusterCache:                opts.ClusterCache,
				RemoteConnectionGracePeriod: remoteConnectionGracePeriod,
			}).SetupWithManager(ctx, mgr, options)
		}},
		{"Machine", func() error {
			return (&machine.Reconciler{
				Client:                      mgr.GetClient(),
				APIReader:                   mgr.GetAPIReader(),
				ClusterCache:                opts.ClusterCache,
				RemoteConditionsGracePeriod: RemoteConditionsGracePeriod,
			}).SetupWithManager(ctx, mgr, options)
		}},
		{"MachineSet", func() error {
			return (&machineset.Reconciler{
				Client:          mgr.GetClient(),
				APIReader:       mgr.GetAPIReader(),
				ClusterCache:    opts.ClusterCache,
				PreflightChecks: sets.New(clusterv1.MachineSetPreflightCheckAll),
			}).SetupWithManager(ctx, mgr, options)
		}},
		{"MachineDeployment", func() error {
			return (&machinedeployment.Reconciler{
				Client:    mgr.GetClient(),
				APIReader: mgr.GetAPIReader(),
			}).SetupWithManager(ctx, mgr, options)
		}},
		{"MachineHealthCheck", func() error {
			return (&machinehealthcheck.Reconciler{
				Client:       mgr.GetClient(),
				ClusterCache: opts.ClusterCache,
			}).SetupWithManager(ctx, mgr, options)
		}},
	}
	for _, r := range reconcilers {
		if err := r.setup(); err != nil {
			return fmt.Errorf("setting up the Cluster API %s controller: %w", r.name, err)
		}
	}

	webhooks := []struct {
		name  string
		setup func(ctrl.Manager) error
	}{
		{"Cluster", (&coreadmission.Cluster{Client: mgr.GetClient(), ClusterCacheReader: opts.ClusterCache}).SetupWebhookWithManager},
		{"Machine", (&coreadmission.Machine{}).SetupWebhookWithManager},
		{"MachineSet", (&coreadmission.MachineSet{}).SetupWebhookWithManager},
		{"MachineDeployment", (&coreadmission.MachineDeployment{}).SetupWebhookWithManager},
		{"MachineHealthCheck", (&coreadmission.MachineHealthCheck{}).SetupWebhookWithManager},
		{"MachineDrainRule", (&coreadmission.MachineDrainRule{}).SetupWebhookWithManager},
	}
	for _, w := range webhooks {
		if err := w.setup(mgr); err != nil {
			return fmt.Errorf("setting up the Cluster API %s webhook: %w", w.name, err)
		}
	}
	return setupTopology(ctx, mgr, opts) // topology.go
}
