package manager

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/core/reconcilers/cluster"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinedeployment"
	"sigs.k8s.io/cluster-api/core/reconcilers/machinehealthcheck"
	"sigs.k8s.io/cluster-api/core/reconcilers/machineset"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// Settings of the Cluster API core reconcilers: Cluster API's own defaults (core/main.go), with
// concurrency sized for one machine.
const (
	// remoteConnectionGracePeriod: after this long without a successful health probe of a
	// workload cluster, its Cluster's RemoteConnectionProbe condition turns False.
	remoteConnectionGracePeriod = 50 * time.Second
	// remoteConditionsGracePeriod: after this long, remote conditions (NodeHealthy...) turn
	// Unknown. Cluster API requires at least 2m and more than remoteConnectionGracePeriod.
	remoteConditionsGracePeriod = 5 * time.Minute
	capiConcurrency             = 10
)

// setupClusterAPI registers Cluster API's core reconcilers and their admission webhooks: Cluster,
// Machine, MachineSet, MachineDeployment and MachineHealthCheck, plus the MachineDrainRule webhook
// (the Machine reconciler reads drain rules when it drains a Node), and what ClusterClass clusters
// and ClusterResourceSets need (capi_topology.go).
func setupClusterAPI(ctx context.Context, mgr ctrl.Manager, deps Deps) error {
	if deps.ClusterCache == nil {
		return fmt.Errorf("setting up Cluster API: ClusterCache is required")
	}
	options := controller.Options{MaxConcurrentReconciles: capiConcurrency}

	reconcilers := []struct {
		name  string
		setup func() error
	}{
		{"Cluster", func() error {
			return (&cluster.Reconciler{
				Client:                      mgr.GetClient(),
				APIReader:                   mgr.GetAPIReader(),
				ClusterCache:                deps.ClusterCache,
				RemoteConnectionGracePeriod: remoteConnectionGracePeriod,
			}).SetupWithManager(ctx, mgr, options)
		}},
		{"Machine", func() error {
			return (&machine.Reconciler{
				Client:                      mgr.GetClient(),
				APIReader:                   mgr.GetAPIReader(),
				ClusterCache:                deps.ClusterCache,
				RemoteConditionsGracePeriod: remoteConditionsGracePeriod,
			}).SetupWithManager(ctx, mgr, options)
		}},
		{"MachineSet", func() error {
			return (&machineset.Reconciler{
				Client:          mgr.GetClient(),
				APIReader:       mgr.GetAPIReader(),
				ClusterCache:    deps.ClusterCache,
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
				ClusterCache: deps.ClusterCache,
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
		{"Cluster", (&coreadmission.Cluster{Client: mgr.GetClient(), ClusterCacheReader: deps.ClusterCache}).SetupWebhookWithManager},
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
	return setupTopology(ctx, mgr, deps) // capi_topology.go
}
