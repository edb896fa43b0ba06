package addons

import (
	"context"
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/addons/drift"
	"github.com/flotilla-dev/flotilla/addons/engine"
	"github.com/flotilla-dev/flotilla/addons/reconcilers/clusterteardown"
	"github.com/flotilla-dev/flotilla/addons/reconcilers/helmchartproxy"
	"github.com/flotilla-dev/flotilla/addons/reconcilers/helmreleaseproxy"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// Options configure the addons component.
type Options struct {
	// ClusterCache hands out REST configs of workload clusters (CAPI's clustercache).
	ClusterCache helmreleaseproxy.RESTConfigGetter
	// Engine performs the Helm actions.
	Engine engine.Engine
	// UninstallTimeout bounds the tries of an uninstall: from the Flotilla Cluster's deletion
	// for uninstallOnClusterDelete Ensure, from the HelmReleaseProxy's for one deleted alone;
	// predelete.DefaultUninstallTimeout (5 minutes) when 0.
	UninstallTimeout time.Duration
	// ResyncInterval is how often Ready releases and proxies are checked again unprompted;
	// the reconcilers' defaults when 0.
	ResyncInterval time.Duration
}

// Setup registers the HelmChartProxy and HelmReleaseProxy reconcilers with mgr, and the one
// that holds a deleted Flotilla Cluster's teardown until its releases are uninstalled.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.ClusterCache == nil || opts.Engine == nil {
		return errors.New("addons component: ClusterCache and Engine are required")
	}
	hcp := &helmchartproxy.Reconciler{
		Client:         mgr.GetClient(),
		Recorder:       mgr.GetEventRecorder(helmchartproxy.FieldOwner),
		ResyncInterval: opts.ResyncInterval,
	}
	if err := hcp.SetupWithManager(mgr); err != nil {
		return err
	}
	hrp := &helmreleaseproxy.Reconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Engine:           opts.Engine,
		ClusterCache:     opts.ClusterCache,
		Recorder:         mgr.GetEventRecorder(helmreleaseproxy.FieldOwner),
		Drift:            &drift.Checker{FieldManager: helm.FieldManager()},
		UninstallTimeout: opts.UninstallTimeout,
		ResyncInterval:   opts.ResyncInterval,
	}
	if err := hrp.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	return (&clusterteardown.Reconciler{Client: mgr.GetClient()}).SetupWithManager(mgr)
}
