package cluster

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	clusterreconciler "github.com/flotilla-dev/flotilla/cluster/reconcilers/cluster"
	clusterwebhooks "github.com/flotilla-dev/flotilla/cluster/webhooks"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// Options configure the cluster component.
type Options struct {
	// Admins are the identities the Cluster webhook trusts with what only admins may do;
	// clusterwebhooks.DefaultAdmins when zero.
	Admins clusterwebhooks.Admins
}

// Setup registers the cluster component with mgr, with the default Options.
func Setup(ctx context.Context, mgr ctrl.Manager) error {
	return Options{}.Setup(ctx, mgr)
}

// Setup registers the Cluster reconciler, the Cluster webhooks and the validating webhooks of
// the provider configs and Packet identities with mgr. The webhooks are served by mgr's webhook
// server; the manager registers their configurations with the API server.
func (o Options) Setup(_ context.Context, mgr ctrl.Manager) error {
	r := &clusterreconciler.Reconciler{
		Client:         mgr.GetClient(),
		Recorder:       mgr.GetEventRecorder(clusterreconciler.FieldOwner),
		ResolveVersion: binaries.ResolveMinor,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&clusterwebhooks.Cluster{Admins: o.Admins}).SetupWebhookWithManager(mgr); err != nil {
		return fmt.Errorf("cluster component: %w", err)
	}
	if err := clusterwebhooks.SetupConfigWebhooksWithManager(mgr, o.Admins); err != nil {
		return fmt.Errorf("cluster component: %w", err)
	}
	return nil
}
