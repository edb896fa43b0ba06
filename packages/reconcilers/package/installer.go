package packagereconciler

import (
	"context"

	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// Installer installs releases into clusters. It is the part of pkg/helm's Engine the reconciler
// uses, in the engine's own types: *helm.Engine is the Installer in production, and tests run it
// against real API servers.
type Installer interface {
	// InstallOrUpgrade installs r, or upgrades it when its chart digest or values changed; it
	// writes nothing to the cluster (ActionUnchanged) when they did not.
	InstallOrUpgrade(ctx context.Context, cfg *rest.Config, r helm.Release) (helm.Result, error)
	// Uninstall removes release name in namespace; nil when it does not exist.
	Uninstall(ctx context.Context, cfg *rest.Config, name, namespace string) error
}

// Flotilla's Helm engine is an Installer.
var _ Installer = (*helm.Engine)(nil)

// RESTConfigs gives REST configs of workload clusters by their Cluster's key. CAPI's
// clustercache.ClusterCache satisfies it.
type RESTConfigs interface {
	GetRESTConfig(ctx context.Context, cluster ctrlclient.ObjectKey) (*rest.Config, error)
}
