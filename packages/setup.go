package packages

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/packages/reconcilers/clusterlifecycle"
	packagereconciler "github.com/flotilla-dev/flotilla/packages/reconcilers/package"
	"github.com/flotilla-dev/flotilla/packages/reconcilers/packagebundle"
	"github.com/flotilla-dev/flotilla/packages/reconcilers/packagebundlecontroller"
	"github.com/flotilla-dev/flotilla/packages/webhooks"
)

// Options configure the packages component.
type Options struct {
	// RESTConfigs reaches workload clusters: CAPI's ClusterCache.
	RESTConfigs packagereconciler.RESTConfigs
	// LocalConfig is the management cluster's own config, used for the Packages of management
	// clusters; the manager's config when nil.
	LocalConfig *rest.Config
	// Installer installs Helm releases: the manager's *helm.Engine in production.
	Installer packagereconciler.Installer
	// Source reads signed bundles: BundleSource{} in production (the default when nil).
	Source packagebundlecontroller.BundleSource
	// Verifier verifies bundle signatures: BundleVerifier{} in production (the default when nil).
	Verifier packagebundle.Verifier
	// HelmTimeout bounds one install, upgrade or uninstall of a Package; the reconciler's
	// default (3 minutes) when 0.
	HelmTimeout time.Duration
	// UninstallTimeout bounds how long a Package with uninstallOnClusterDelete Ensure holds the
	// teardown of its deleted cluster back, from the Cluster's deletion;
	// predelete.DefaultUninstallTimeout (5 minutes) when 0.
	UninstallTimeout time.Duration
	// SkipWebhooks does not register the Package validation webhook (for a manager that serves
	// no webhooks).
	SkipWebhooks bool
}

// Setup registers the packages reconcilers and the Package webhook with mgr.
func Setup(_ context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.Installer == nil {
		return errors.New("packages component: an Installer is required")
	}
	if opts.Source == nil {
		opts.Source = BundleSource{}
	}
	if opts.Verifier == nil {
		opts.Verifier = BundleVerifier{}
	}
	if opts.LocalConfig == nil {
		opts.LocalConfig = mgr.GetConfig()
	}
	lifecycle := &clusterlifecycle.Reconciler{
		Client:    mgr.GetClient(),
		Recorder:  mgr.GetEventRecorder(clusterlifecycle.FieldOwner),
		APIReader: mgr.GetAPIReader(),
	}
	pbc := &packagebundlecontroller.Reconciler{
		Client:    mgr.GetClient(),
		Recorder:  mgr.GetEventRecorder(packagebundlecontroller.FieldOwner),
		APIReader: mgr.GetAPIReader(),
		Source:    opts.Source,
	}
	bundles := &packagebundle.Reconciler{
		Client:    mgr.GetClient(),
		Recorder:  mgr.GetEventRecorder(packagebundle.FieldOwner),
		APIReader: mgr.GetAPIReader(),
		Verifier:  opts.Verifier,
	}
	pkg := &packagereconciler.Reconciler{
		Client:           mgr.GetClient(),
		Recorder:         mgr.GetEventRecorder(packagereconciler.FieldOwner),
		APIReader:        mgr.GetAPIReader(),
		Installer:        opts.Installer,
		RESTConfigs:      opts.RESTConfigs,
		LocalConfig:      opts.LocalConfig,
		HelmTimeout:      opts.HelmTimeout,
		UninstallTimeout: opts.UninstallTimeout,
	}
	for _, s := range []interface{ SetupWithManager(ctrl.Manager) error }{lifecycle, pbc, bundles, pkg} {
		if err := s.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("packages component: %w", err)
		}
	}
	if !opts.SkipWebhooks {
		if err := (&webhooks.Package{}).SetupWebhookWithManager(mgr); err != nil {
			return fmt.Errorf("packages component: %w", err)
		}
	}
	return nil
}
