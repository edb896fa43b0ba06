package packagereconciler

import (
	"context"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Chart names a chart in an OCI registry: RepoURL is oci://<registry>/<repository>, Name the
// chart (the repository's last element).
type Chart struct {
	RepoURL, Name, Version string
	// Digest pins the chart (sha256:...); verified after the pull.
	Digest string
}

// Registry holds the credentials and transport of the chart's registry.
type Registry struct {
	Username, Password string
	CAData             []byte
	PlainHTTP          bool
}

// Release is the desired state of a Package's Helm release.
type Release struct {
	Name, Namespace string
	Chart           Chart
	Registry        Registry
	Values          map[string]any
	// Labels are stored on the Helm release.
	Labels map[string]string
	// Timeout bounds the Helm action itself (which a cancelled context does not stop halfway).
	Timeout time.Duration
}

// Result is what an install or upgrade did.
type Result struct {
	// Changed is false when the release already had the chart and values (nothing written).
	Changed bool
	// Revision is the release's revision; ChartVersion the chart version deployed.
	Revision     int
	ChartVersion string
}

// Installer installs releases into clusters. pkg/helm's Engine does it, through an adapter.
type Installer interface {
	// InstallOrUpgrade installs r, or upgrades it when its chart or values changed, creating its
	// namespace.
	InstallOrUpgrade(ctx context.Context, cfg *rest.Config, r Release) (Result, error)
	// Uninstall removes release name in namespace; nil when it does not exist.
	Uninstall(ctx context.Context, cfg *rest.Config, name, namespace string) error
}

// RESTConfigs gives REST configs of workload clusters by their Cluster's key. CAPI's
// clustercache.ClusterCache satisfies it.
type RESTConfigs interface {
	GetRESTConfig(ctx context.Context, cluster client.ObjectKey) (*rest.Config, error)
}
