package v1alpha1

// SystemNamespace is the management cluster's namespace of Flotilla itself, which only admins
// may read: the manager's leader election Lease and version record, the provider inventory,
// infrastructure and Git credentials.
const SystemNamespace = "flotilla-system"

// The registry-mirror ConfigMap (flotilla-system/registry-mirror) sets the registry mirror of
// the whole management cluster: every bundle and chart the manager pulls, for packages and
// addons, comes from the mirror instead of the registry that is named. A
// PackageBundleController (spec.registryMirror) and a HelmChartProxy (spec.registryMirror)
// may name another mirror for their own pulls. Only admins may write flotilla-system.
const (
	// RegistryMirrorConfigMapName is the ConfigMap's name, in SystemNamespace.
	RegistryMirrorConfigMapName = "registry-mirror"
	// RegistryMirrorRegistryKey holds the mirror: host[:port], optionally followed by the path
	// the copies are below (127.0.0.1:5002, mirror.example.com/flotilla).
	RegistryMirrorRegistryKey = "registry"
	// RegistryMirrorCredentialsSecretKey optionally names a Secret in SystemNamespace with the
	// keys username, password and ca.crt (each optional) for the mirror, as package-defaults'
	// credentials Secret has them.
	RegistryMirrorCredentialsSecretKey = "credentialsSecret"
	// RegistryMirrorPlainHTTPKey is "true" when the mirror is reached over plain HTTP.
	RegistryMirrorPlainHTTPKey = "plainHTTP"
	// RegistryMirrorInsecureSkipTLSVerifyKey is "true" when the mirror's certificate is not
	// verified (tests only).
	RegistryMirrorInsecureSkipTLSVerifyKey = "insecureSkipTLSVerify"
)

// PreDeleteHookAnnotationPrefix starts the name of an annotation on a Cluster that holds its
// teardown back: while the Cluster carries one, its deletion does not delete the CAPI Cluster
// (and so neither its workers nor its control plane). The component named after the prefix
// (pre-delete.hook.cluster.flotilla.dev/packages, .../addons) uninstalls what it installed
// into the cluster while its API server still answers, and then removes its annotation. As
// with Cluster API's Machine deletion hooks, whoever sets one must remove it.
const PreDeleteHookAnnotationPrefix = "pre-delete.hook.cluster.flotilla.dev/"

// TeardownAnnotation is set on the CAPI Cluster of a Cluster being deleted while pre-delete
// hooks hold its teardown back: whoever installs into CAPI Clusters (HelmChartProxies) stops
// selecting it, so that its releases are uninstalled before it is deleted.
const TeardownAnnotation = "cluster.flotilla.dev/teardown"

// UninstallOnClusterDelete says what becomes of a Package or an addon release when its cluster is
// deleted: it applies from the moment the Flotilla Cluster is deleted, and one rule
// (pkg/predelete.Decide) applies it to packages and addons alike.
// +kubebuilder:validation:Enum=Ensure;BestEffort;Skip
type UninstallOnClusterDelete string

const (
	// UninstallEnsure uninstalls the release before the cluster's control plane is deleted,
	// trying again while the cluster does not answer, up to the uninstall timeout (5 minutes)
	// after the Cluster's deletion; then the release is left in the cluster, with a Warning
	// Event.
	UninstallEnsure UninstallOnClusterDelete = "Ensure"
	// UninstallBestEffort (the default) uninstalls the release before the cluster's control
	// plane is deleted when the cluster answers; a cluster that does not answer, or an
	// uninstall that fails, does not hold the teardown back: one try, then the release is left
	// in the cluster, with a Warning Event.
	UninstallBestEffort UninstallOnClusterDelete = "BestEffort"
	// UninstallSkip leaves the release to go with the cluster: no uninstall, no wait.
	UninstallSkip UninstallOnClusterDelete = "Skip"
)
