package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// ReconcileStrategy says whether a release is kept in line with its spec.
// +kubebuilder:validation:Enum=Continuous;InstallOnce
type ReconcileStrategy string

const (
	// ReconcileContinuous upgrades the release whenever its chart or rendered values change,
	// and reinstalls it when its chart, repository, release name or namespace change.
	ReconcileContinuous ReconcileStrategy = "Continuous"
	// ReconcileInstallOnce installs the release once and then leaves it alone; it is still
	// uninstalled when its cluster stops matching or its proxy is deleted.
	ReconcileInstallOnce ReconcileStrategy = "InstallOnce"
)

// ValuesSourceKind is the kind of object a ValuesReference names.
// +kubebuilder:validation:Enum=ConfigMap;Secret
type ValuesSourceKind string

const (
	// ConfigMapValues reads values from a ConfigMap.
	ConfigMapValues ValuesSourceKind = "ConfigMap"
	// SecretValues reads values from a Secret.
	SecretValues ValuesSourceKind = "Secret"
)

// DefaultValuesKey is the key a ValuesReference reads when it names none.
const DefaultValuesKey = "values.yaml"

// TenantValuesLabel is the label of a ConfigMap, in the namespace of a HelmChartProxy with
// tenantValues, naming the proxy whose releases its key values.yaml overrides: in every cluster
// of the namespace, or, with the label cluster.x-k8s.io/cluster-name as well, in that cluster
// only. Secrets are not found by label (they are never listed) but by name:
// <proxy>-values and <proxy>-values-<cluster>.
const TenantValuesLabel = "addons.flotilla.dev/values-for"

// ValuesReference names a ConfigMap or Secret, in the proxy's namespace, holding Helm values as
// YAML under one key.
type ValuesReference struct {
	// kind is ConfigMap or Secret.
	Kind ValuesSourceKind `json:"kind"`

	// name of the ConfigMap or Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// key holding the values; "values.yaml" when empty.
	// +optional
	Key string `json:"key,omitempty"`

	// optional lets the release install without these values when the object or key is
	// missing. A missing required source stops the release from installing or upgrading.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// HelmOptions are the options of Helm's install and upgrade actions.
type HelmOptions struct {
	// wait waits until the release's resources are ready before marking it deployed.
	// +optional
	Wait bool `json:"wait,omitempty"`

	// timeout bounds each Helm action (and the wait); 5m when unset.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// atomic rolls a failed install or upgrade back (an install is uninstalled). Implies wait.
	// +optional
	Atomic bool `json:"atomic,omitempty"`

	// createNamespace creates the release namespace when it does not exist; true when unset.
	// +optional
	CreateNamespace *bool `json:"createNamespace,omitempty"`

	// skipCRDs does not install the CRDs in the chart's crds/ directory.
	// +optional
	SkipCRDs bool `json:"skipCRDs,omitempty"`

	// maxHistory is the number of release revisions Helm keeps; 5 when unset.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxHistory int32 `json:"maxHistory,omitempty"`
}

// SecretReference names a Secret in the proxy's namespace.
type SecretReference struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// RegistryOptions are the credentials and transport settings for the chart's repository.
type RegistryOptions struct {
	// credentialsSecretRef names a Secret with the keys "username" and "password".
	// +optional
	CredentialsSecretRef *SecretReference `json:"credentialsSecretRef,omitempty"`

	// caSecretRef names a Secret whose key "ca.crt" holds the PEM CA bundle that signs the
	// repository's serving certificate.
	// +optional
	CASecretRef *SecretReference `json:"caSecretRef,omitempty"`

	// insecureSkipTLSVerify does not verify the repository's serving certificate.
	// +optional
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`

	// plainHTTP talks to an OCI registry over HTTP instead of HTTPS.
	// +optional
	PlainHTTP bool `json:"plainHTTP,omitempty"`
}

// RegistryMirror is an OCI registry holding copies of other registries' repositories at the
// same paths, below an optional prefix (`flotilla packages import` fills one).
type RegistryMirror struct {
	// registry is the mirror's host[:port], optionally followed by the path the copies are
	// below, such as 127.0.0.1:5002 or mirror.example.com/flotilla.
	// +kubebuilder:validation:MinLength=1
	Registry string `json:"registry"`

	// RegistryOptions are the mirror's credentials and transport settings; the credentials of
	// spec.registry are never sent to the mirror.
	RegistryOptions `json:",inline"`
}

// DriftCorrectionMode switches drift correction on or off.
// +kubebuilder:validation:Enum=Enabled;Disabled
type DriftCorrectionMode string

const (
	// DriftCorrectionEnabled restores objects of the release that were changed or deleted in
	// the workload cluster.
	DriftCorrectionEnabled DriftCorrectionMode = "Enabled"
	// DriftCorrectionDisabled leaves them alone.
	DriftCorrectionDisabled DriftCorrectionMode = "Disabled"
)

// DriftCorrection configures drift detection and correction of a release.
type DriftCorrection struct {
	// mode is Enabled or Disabled.
	// +kubebuilder:default=Disabled
	Mode DriftCorrectionMode `json:"mode"`

	// interval is how often the live objects are compared in full with the release's
	// manifest, as a safety net. A change or deletion of an object of the release does not
	// wait for it: the objects are watched in the workload cluster and restored when they
	// change. Unset, the full comparison comes with the resync (10m by default); an interval
	// longer than the resync is the resync's. While the workload cluster cannot be watched,
	// drift is looked for by polling, every interval (30s when unset).
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// ignore lists fields that other controllers own (an autoscaler's replicas, say): they are
	// neither reported as drift nor restored.
	// +optional
	Ignore []DriftIgnoreRule `json:"ignore,omitempty"`
}

// DriftIgnoreRule ignores fields of the release's objects of one kind (and name).
type DriftIgnoreRule struct {
	// kind of the objects, such as Deployment.
	// +kubebuilder:validation:MinLength=1
	Kind string `json:"kind"`

	// name of the object; every object of the kind when empty.
	// +optional
	Name string `json:"name,omitempty"`

	// paths are JSON pointers (RFC 6901) to the ignored fields, such as "/spec/replicas".
	// Without paths the whole object is ignored.
	// +kubebuilder:validation:items:Pattern=`^/`
	// +optional
	Paths []string `json:"paths,omitempty"`
}

// ReleaseSpec is what a release is made of: the chart, where it comes from, and how Helm
// installs it. A HelmChartProxy holds it for every cluster it selects; each HelmReleaseProxy holds
// a copy for its cluster.
type ReleaseSpec struct {
	// chartName is the chart's name in the repository.
	// +kubebuilder:validation:MinLength=1
	ChartName string `json:"chartName"`

	// repoURL is an OCI registry path (oci://host/path, the chart below it) or a classic chart
	// repository (http:// or https://, serving index.yaml).
	// +kubebuilder:validation:Pattern=`^(oci|https?)://.+`
	RepoURL string `json:"repoURL"`

	// version is an exact chart version or a semver range; the latest version when empty.
	// +optional
	Version string `json:"version,omitempty"`

	// chartDigest pins the chart by its content, as sha256:<64 hex digits>: for an OCI
	// registry the chart's manifest digest (what `helm push` prints), for a classic repository
	// the SHA-256 of the chart archive (its index.yaml entry's digest). The chart is pulled by
	// that digest and installed only when its content matches it (and its version matches an
	// exact version); a tag or index entry moved to other content is never installed.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +optional
	ChartDigest string `json:"chartDigest,omitempty"`

	// namespace the release is installed in; "default" when empty.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// valuesFrom are ConfigMaps and Secrets in the proxy's namespace holding values, merged in
	// order; the rendered valuesTemplate is merged over them.
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// reconcileStrategy is Continuous (the default) or InstallOnce.
	// +kubebuilder:default=Continuous
	// +optional
	ReconcileStrategy ReconcileStrategy `json:"reconcileStrategy,omitempty"`

	// options of Helm's install and upgrade actions.
	// +optional
	Options HelmOptions `json:"options,omitempty,omitzero"`

	// registry holds credentials and TLS settings for the repository.
	// +optional
	Registry *RegistryOptions `json:"registry,omitempty"`

	// registryMirror is where the chart is pulled from instead of the registry repoURL names,
	// with the mirror's own credentials and CA (Secrets in the proxy's namespace), overriding
	// the management cluster's mirror (the ConfigMap flotilla-system/registry-mirror) for this
	// proxy's releases only.
	// +optional
	RegistryMirror *RegistryMirror `json:"registryMirror,omitempty"`

	// driftCorrection restores objects of the release changed or deleted in the cluster.
	// +optional
	DriftCorrection *DriftCorrection `json:"driftCorrection,omitempty"`

	// dependsOn names other HelmChartProxies in the same namespace whose releases must be Ready
	// in a cluster before this release is installed or upgraded there.
	// +listType=set
	// +optional
	DependsOn []string `json:"dependsOn,omitempty"`

	// dryRun renders the release for each cluster and diffs it against what is installed there,
	// without installing, upgrading or uninstalling anything. Each HelmReleaseProxy reports the
	// diff in status.dryRunDiff.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`

	// postRender patches the rendered manifests with kustomize before they are installed:
	// patches (strategic merge, JSON 6902), images and labels.
	// +optional
	PostRender *PostRender `json:"postRender,omitempty"`

	// tenantValues layers values that the teams owning the clusters keep, in ConfigMaps of the
	// namespace labelled addons.flotilla.dev/values-for=<proxy> and in its Secrets
	// <proxy>-values and <proxy>-values-<cluster>, over the proxy's own (valuesFrom and the
	// rendered valuesTemplate): first those for every cluster, then those for this one
	// (ConfigMaps also labelled cluster.x-k8s.io/cluster-name=<cluster>), each in name order, key
	// values.yaml. A team overrides an addon for its clusters without editing the proxy.
	// +optional
	TenantValues bool `json:"tenantValues,omitempty"`

	// uninstallOnClusterDelete says what becomes of the release when its cluster is deleted
	// through Flotilla: Ensure, BestEffort (the default) or Skip (docs/addons.md, "Deleting a
	// cluster").
	// +optional
	UninstallOnClusterDelete flotillav1.UninstallOnClusterDelete `json:"uninstallOnClusterDelete,omitempty"`
}
