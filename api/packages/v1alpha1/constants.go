package v1alpha1

import "strings"

// Namespaces.
const (
	// PackagesNamespace holds the PackageBundleControllers, the PackageBundles and the
	// package-defaults ConfigMap.
	PackagesNamespace = "flotilla-packages"
	// ClusterNamespacePrefix starts the name of the namespace holding one cluster's Packages:
	// flotilla-packages-<cluster>.
	ClusterNamespacePrefix = "flotilla-packages-"
)

// ClusterNamespace is the namespace of the Packages of cluster name.
func ClusterNamespace(cluster string) string { return ClusterNamespacePrefix + cluster }

// ClusterFromNamespace returns the cluster whose Packages namespace ns is, and false when ns is
// not such a namespace.
func ClusterFromNamespace(ns string) (string, bool) {
	cluster, ok := strings.CutPrefix(ns, ClusterNamespacePrefix)
	return cluster, ok && cluster != ""
}

// The package-defaults ConfigMap (flotilla-packages/package-defaults) configures packages on a
// management cluster: the default bundle source of PackageBundleControllers that name none, and
// the public key every bundle signature is verified with.
const (
	// DefaultsConfigMapName is the ConfigMap's name, in PackagesNamespace.
	DefaultsConfigMapName = "package-defaults"
	// DefaultsRegistryKey holds the default registry host[:port].
	DefaultsRegistryKey = "registry"
	// DefaultsRepositoryKey holds the default repository of bundles in that registry.
	DefaultsRepositoryKey = "repository"
	// DefaultsPublicKeyKey holds the PEM (PKIX) ECDSA P-256 public key bundles are signed for.
	DefaultsPublicKeyKey = "publicKey"
	// DefaultsPlainHTTPKey is "true" when the registries are reached over plain HTTP (loopback
	// registries only).
	DefaultsPlainHTTPKey = "plainHTTP"
	// DefaultsBundleHistoryKey optionally holds how many bundles are kept per source and
	// Kubernetes minor, newest first, besides the active bundles of PackageBundleControllers;
	// DefaultBundleHistory when absent or not a positive number.
	DefaultsBundleHistoryKey = "bundleHistory"
	// DefaultBundleHistory is the number of bundles kept per source and Kubernetes minor.
	DefaultBundleHistory = 3
	// DefaultsCredentialsSecretKey optionally names a Secret in PackagesNamespace with keys
	// username, password and ca.crt, used for every registry of bundles and charts.
	DefaultsCredentialsSecretKey = "credentialsSecret"
)

// Keys of the registry credentials Secret.
const (
	CredentialsUsernameKey = "username"
	CredentialsPasswordKey = "password"
	CredentialsCAKey       = "ca.crt"
)

// Finalizers.
const (
	// ClusterCleanupFinalizer is set on every Flotilla Cluster (cluster.flotilla.dev) by the
	// packages lifecycle controller: deleting the Cluster first uninstalls its Packages, then
	// deletes its Packages namespace and its PackageBundleController.
	ClusterCleanupFinalizer = "packages.flotilla.dev/cleanup"
	// PackageFinalizer is set on every Package: deleting it uninstalls its Helm release.
	PackageFinalizer = "packages.flotilla.dev/uninstall"
)

// Labels and annotations.
const (
	// ClusterNameLabel is set on the objects the lifecycle controller creates for a cluster (its
	// PackageBundleController and Packages namespace), with the cluster's name.
	ClusterNameLabel = "packages.flotilla.dev/cluster-name"
	// ClusterNamespaceLabel is set next to ClusterNameLabel, with the namespace of the Flotilla
	// Cluster.
	ClusterNamespaceLabel = "packages.flotilla.dev/cluster-namespace"
	// ClusterUIDLabel is set next to ClusterNameLabel, with the UID of the Flotilla Cluster. The
	// lifecycle controller deletes a cluster's Packages namespace (and the Packages in it) and
	// its PackageBundleController only when they carry that Cluster's UID: a Cluster of the
	// same name in another namespace never deletes what belongs to another.
	ClusterUIDLabel = "packages.flotilla.dev/cluster-uid"
	// DependencyOfLabel is set on a Package the controller created because another Package
	// depends on it, with that Package's name.
	DependencyOfLabel = "packages.flotilla.dev/dependency-of"
	// CheckUpgradesAnnotation, set or changed on a PackageBundleController, makes it check its
	// source for new bundles now instead of at the next upgradeCheckInterval.
	CheckUpgradesAnnotation = "packages.flotilla.dev/check-upgrades"
)

// Condition types.
const (
	// PackagesReadyCondition, on a Flotilla Cluster (cluster.flotilla.dev), is True when the
	// cluster's Packages namespace and PackageBundleController exist and belong to it (they carry
	// its namespace, name and UID). False with reason NameConflictReason when one of them belongs
	// to another Cluster of the same name: the lifecycle controller then touches neither.
	PackagesReadyCondition = "PackagesReady"
	// ReadyCondition: a Package is installed at its target version with its config; a
	// PackageBundleController has read its source and has a valid active bundle.
	ReadyCondition = "Ready"
	// SourceReachableCondition: the PackageBundleController's registry answered its last check.
	SourceReachableCondition = "SourceReachable"
	// ValidCondition: a PackageBundle's signature verified.
	ValidCondition = "Valid"
)

// Condition reasons.
const (
	ReadyReason = "Ready"
	// ClusterNotFoundReason: no Flotilla Cluster has the PackageBundleController's name.
	ClusterNotFoundReason = "ClusterNotFound"
	// NoSourceReason: neither spec.source nor the package-defaults ConfigMap names a registry.
	NoSourceReason = "NoSource"
	// RegistryUnreachableReason: listing or pulling bundles failed.
	RegistryUnreachableReason = "RegistryUnreachable"
	// NoBundleReason: the registry holds no valid bundle for the cluster's Kubernetes minor.
	NoBundleReason = "NoBundle"
	// ActiveBundleInvalidReason: spec.activeBundle names a bundle that does not exist or is
	// invalid.
	ActiveBundleInvalidReason = "ActiveBundleInvalid"
	// SignatureVerifiedReason: the bundle's signature verified with the configured key.
	SignatureVerifiedReason = "SignatureVerified"
	// InvalidSignatureReason: the bundle is unsigned, its signature is bad, or no key is
	// configured.
	InvalidSignatureReason = "InvalidSignature"
	// PackageControllerNotFoundReason: the cluster has no PackageBundleController, or it has no
	// active bundle yet.
	PackageControllerNotFoundReason = "PackageControllerNotFound"
	// InvalidSpecReason: the Package names a package or version its active bundle does not
	// have, or its config breaks the schema; the message names the field.
	InvalidSpecReason = "InvalidSpec"
	// WaitingForDependenciesReason: Packages this one depends on are not Ready yet.
	WaitingForDependenciesReason = "WaitingForDependencies"
	// ClusterUnreachableReason: the workload cluster cannot be reached.
	ClusterUnreachableReason = "ClusterUnreachable"
	// InstallingReason: Helm is installing the release.
	InstallingReason = "Installing"
	// UpgradingReason: Helm is upgrading the release to a new chart or config.
	UpgradingReason = "Upgrading"
	// InstallFailedReason: Helm failed to install or upgrade the release; the message is Helm's.
	InstallFailedReason = "InstallFailed"
	// DeletingReason: the Package is being uninstalled.
	DeletingReason = "Deleting"
	// NameConflictReason: the Packages namespace or PackageBundleController named after a
	// Flotilla Cluster belongs to another Cluster of the same name (in another namespace); the
	// message names it.
	NameConflictReason = "NameConflict"
)
