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

