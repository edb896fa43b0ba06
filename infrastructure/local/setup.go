package local

import (
	"context"
	"errors"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"sigs.k8s.io/cluster-api/controllers/clustercache"

	"github.com/flotilla-dev/flotilla/infrastructure/local/reconcilers/localcluster"
	"github.com/flotilla-dev/flotilla/infrastructure/local/reconcilers/localcontrolplane"
	"github.com/flotilla-dev/flotilla/infrastructure/local/reconcilers/localmachine"
)

// Options configure the local provider's reconcilers.
type Options struct {
	// ClusterCache gives clients of workload clusters; LocalMachine creates Nodes through it.
	ClusterCache clustercache.ClusterCache
	// Home is $FLOTILLA_HOME; control planes keep their data in Home/clusters/<cluster>.
	Home string
	// BinRoot is the control plane binary cache, holding one directory per Kubernetes version.
	BinRoot string
	// ControlPlaneConcurrency is how many LocalControlPlanes are reconciled at once; 4 when 0.
	// A reconcile does not wait for a control plane to become ready, so a few workers start
	// many clusters quickly.
	ControlPlaneConcurrency int
	// MachineConcurrency is how many LocalMachines are reconciled at once; 10 when 0.
	MachineConcurrency int
}

// Setup registers the LocalControlPlane, LocalCluster and LocalMachine reconcilers with mgr.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.ClusterCache == nil || opts.Home == "" || opts.BinRoot == "" {
		return errors.New("local provider: ClusterCache, Home and BinRoot must be set")
	}
	controlPlaneConcurrency := opts.ControlPlaneConcurrency
	if controlPlaneConcurrency == 0 {
		controlPlaneConcurrency = 4
	}
	machineConcurrency := opts.MachineConcurrency
	if machineConcurrency == 0 {
		machineConcurrency = 10
	}

	if err := (&localcontrolplane.Reconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Home:      opts.Home,
		BinRoot:   opts.BinRoot,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: controlPlaneConcurrency}); err != nil {
		return fmt.Errorf("local provider: %w", err)
	}
	if err := (&localcluster.Reconciler{
		Client: mgr.GetClient(),
	}).SetupWithManager(ctx, mgr, controller.Options{}); err != nil {
		return fmt.Errorf("local provider: %w", err)
	}
	if err := (&localmachine.Reconciler{
		Client:       mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		ClusterCache: opts.ClusterCache,
		Home:         opts.Home,
		BinRoot:      opts.BinRoot,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: machineConcurrency}); err != nil {
		return fmt.Errorf("local provider: %w", err)
	}
	return nil
}
