package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RollbackAnnotation is set on a HelmReleaseProxy by its HelmChartProxy's failed rollout, with
// the HelmReleaseProxy's generation as value: the release is rolled back to the revision it ran
// before that generation, and held there until the spec changes again.
const RollbackAnnotation = "addons.flotilla.dev/rollback-generation"

// HelmReleaseProxyFinalizer lets the HelmReleaseProxy reconciler uninstall the release before the
// HelmReleaseProxy goes away.
const HelmReleaseProxyFinalizer = "addons.flotilla.dev/helmreleaseproxy"

// Condition types of a HelmReleaseProxy (besides Ready and Paused).
const (
	// DriftedCondition is True when objects of the release differ from its manifest in the
	// cluster; status.drifted lists them.
	DriftedCondition = "Drifted"

	// HealthyCondition is True when the release is Ready and its Deployments, StatefulSets and
	// DaemonSets are available; the rollout's health gate.
	HealthyCondition = "Healthy"

	// OrphanedCondition is True when the HelmReleaseProxy is being deleted but its cluster did
	// not answer within the uninstall timeout: the release is left in the cluster.
	OrphanedCondition = "Orphaned"
)

// Condition reasons of a HelmReleaseProxy.
const (
	// InstallingReason: the release is being installed.
	InstallingReason = "Installing"
	// InstallFailedReason: Helm's install or upgrade failed; the message is Helm's error.
	InstallFailedReason = "InstallFailed"
	// UninstallFailedReason: Helm's uninstall failed; the message is Helm's error.
	UninstallFailedReason = "UninstallFailed"
	// ValuesErrorReason: the values could not be read (a missing ConfigMap or Secret, or YAML
	// that does not parse); the message names the source.
	ValuesErrorReason = "ValuesError"
	// RegistryErrorReason: the registry credentials or CA could not be read.
	RegistryErrorReason = "RegistryError"
	// ClusterUnreachableReason: the workload cluster's API server cannot be reached.
	ClusterUnreachableReason = "ClusterUnreachable"
	// ClusterNotFoundReason: the Cluster the HelmReleaseProxy names does not exist.
	ClusterNotFoundReason = "ClusterNotFound"
	// ReleaseMissingReason: the release was installed but is no longer in the cluster.
	ReleaseMissingReason = "ReleaseMissing"
	// ReleaseNotDeployedReason: Helm reports the release in a state other than deployed.
	ReleaseNotDeployedReason = "ReleaseNotDeployed"
	// DriftDetectedReason: objects of the release differ from its manifest.
	DriftDetectedReason = "DriftDetected"
	// WaitingForDependenciesReason: a HelmChartProxy this one dependsOn is not Ready in the
	// cluster yet; the message names it.
	WaitingForDependenciesReason = "WaitingForDependencies"
	// WaitingForDependentsReason: the release is to be uninstalled, and releases of the same
	// cluster that depend on it (through dependsOn) are still installed; the message names them.
	// It is uninstalled after them.
	WaitingForDependentsReason = "WaitingForDependents"
	// RolledBackReason: a failed rollout rolled the release back; it stays at that revision
	// until the spec changes.
	RolledBackReason = "RolledBack"
	// WorkloadsNotAvailableReason: some workloads of the release are not available; the
	// message names them.
	WorkloadsNotAvailableReason = "WorkloadsNotAvailable"
	// DryRunReason: spec.dryRun is set and the release would change; status.dryRunDiff says how.
	DryRunReason = "DryRun"
	// DriftCheckFailedReason: the live objects could not be read.
	DriftCheckFailedReason = "DriftCheckFailed"
	// NoDriftReason: the release's objects match its manifest.
	NoDriftReason = "NoDrift"
	// UnreachableAtDeleteReason: the cluster was unreachable when the release had to be
	// uninstalled, for longer than the uninstall timeout.
	UnreachableAtDeleteReason = "UnreachableAtDelete"
)

// HelmReleaseProxySpec is one release in one cluster, as its HelmChartProxy wants it.
type HelmReleaseProxySpec struct {
	// clusterName is the Cluster API Cluster, in the same namespace, the release is installed in.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	ClusterName string `json:"clusterName"`

	// releaseName is the Helm release's name.
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ReleaseName string `json:"releaseName"`

	// values are the release's values as YAML, rendered from the proxy's valuesTemplate for this
	// cluster. They are merged over the valuesFrom sources.
	// +optional
	Values string `json:"values,omitempty"`

	// ReleaseSpec is the chart, its source and Helm's options.
	ReleaseSpec `json:",inline"`
}

// InstalledRelease identifies what is installed in the cluster, so that a change of chart,
// repository, release name or namespace can uninstall it before the new release installs.
type InstalledRelease struct {
	// releaseName of the Helm release.
	ReleaseName string `json:"releaseName"`
	// namespace of the Helm release.
	Namespace string `json:"namespace"`
	// repoURL the chart came from.
	RepoURL string `json:"repoURL"`
	// chartName of the chart.
	ChartName string `json:"chartName"`
}

// DriftedObject is an object of the release that differs from the manifest.
type DriftedObject struct {
	// apiVersion of the object.
	APIVersion string `json:"apiVersion"`
	// kind of the object.
	Kind string `json:"kind"`
	// namespace of the object; empty for cluster-scoped objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// name of the object.
	Name string `json:"name"`
	// reason is Modified or Deleted.
	Reason string `json:"reason"`
	// paths are JSON pointers to the fields that differ (Modified only).
	// +optional
	Paths []string `json:"paths,omitempty"`
}

// HelmReleaseProxyStatus is the release's state in its cluster.
type HelmReleaseProxyStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// installed is the release currently installed in the cluster; nil before the first
	// install and after an uninstall.
	// +optional
	Installed *InstalledRelease `json:"installed,omitempty"`

	// revision is the Helm release's revision.
	// +optional
	Revision int32 `json:"revision,omitempty"`

	// releaseStatus is Helm's status of the release, such as deployed or failed.
	// +optional
	ReleaseStatus string `json:"releaseStatus,omitempty"`

	// chartVersion is the version of the chart installed.
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`

	// previousRevision is the revision that was deployed before the last upgrade, where a
	// rollback goes.
	// +optional
	PreviousRevision int32 `json:"previousRevision,omitempty"`

	// appliedGeneration is the generation whose spec the last successful install or upgrade
	// applied.
	// +optional
	AppliedGeneration int64 `json:"appliedGeneration,omitempty"`

	// rolledBackGeneration is the generation a rollback was made for; the release is not
	// upgraded while the spec is at that generation.
	// +optional
	RolledBackGeneration int64 `json:"rolledBackGeneration,omitempty"`

	// valuesHash is the SHA-256 of the values the release was installed with (valuesFrom
	// merged with values), "sha256:<hex>".
	// +optional
	ValuesHash string `json:"valuesHash,omitempty"`

	// appliedHash is a digest of everything the last successful install or upgrade was made
	// from (chart source and version, values, options); when the spec still hashes to it the
	// release is not touched.
	// +optional
	AppliedHash string `json:"appliedHash,omitempty"`

	// drifted lists the objects of the release that differed from the manifest at the last
	// comparison. Objects drift correction restored are listed until the next comparison.
	// +optional
	Drifted []DriftedObject `json:"drifted,omitempty"`

	// dryRunDiff is, while spec.dryRun is true, the unified diff from the installed manifest to
	// the one the spec would install ("" when nothing would change), cut at 32 KiB.
	// +optional
	DryRunDiff string `json:"dryRunDiff,omitempty"`

	// driftCorrections counts the objects drift correction restored.
	// +optional
	DriftCorrections int64 `json:"driftCorrections,omitempty"`

	// conditions: Ready, Drifted, Orphaned, Paused.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// HelmReleaseProxy is one Helm release in one workload cluster, created by a HelmChartProxy for
// each cluster it selects. Its Ready condition says whether the release is deployed as specified
// and carries Helm's own error when it is not.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move="
// +kubebuilder:resource:path=helmreleaseproxies,shortName=fhrp,categories=flotilla
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.spec.chartName`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.chartVersion`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.revision`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.releaseStatus`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HelmReleaseProxy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HelmReleaseProxySpec   `json:"spec,omitempty"`
	Status HelmReleaseProxyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// HelmReleaseProxyList is a list of HelmReleaseProxies.
type HelmReleaseProxyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmReleaseProxy `json:"items"`
}
