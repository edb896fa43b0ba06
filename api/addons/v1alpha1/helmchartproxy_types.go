package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HelmChartProxyFinalizer lets the HelmChartProxy reconciler delete the proxy's
// HelmReleaseProxies, and so uninstall its releases, before the proxy goes away.
const HelmChartProxyFinalizer = "addons.flotilla.dev/helmchartproxy"

// HelmChartProxyNameLabel is set on every HelmReleaseProxy with the name of its HelmChartProxy.
const HelmChartProxyNameLabel = "addons.flotilla.dev/helmchartproxy-name"

// Condition types of a HelmChartProxy.
const (
	// ReadyCondition is True when every selected cluster's HelmReleaseProxy is Ready. On a
	// HelmReleaseProxy it is True when the release is deployed as its spec says.
	ReadyCondition = "Ready"

	// ValuesRenderedCondition is True when the valuesTemplate rendered for every selected
	// cluster. When it fails for some, their HelmReleaseProxies keep their previous values and
	// the message names the clusters and the template line.
	ValuesRenderedCondition = "ValuesRendered"

	// PausedCondition is True while reconciliation is paused by the cluster.x-k8s.io/paused
	// annotation (on the proxy or the release proxy) or by the Cluster's spec.paused.
	PausedCondition = "Paused"
)

// Condition reasons shared by HelmChartProxy and HelmReleaseProxy.
const (
	// ReadyReason: the condition holds.
	ReadyReason = "Ready"
	// NoClustersSelectedReason: the clusterSelector matches no Cluster in the namespace.
	NoClustersSelectedReason = "NoClustersSelected"
	// ReleasesNotReadyReason: some HelmReleaseProxies are not Ready yet; the message names them.
	ReleasesNotReadyReason = "ReleasesNotReady"
	// InvalidSelectorReason: the clusterSelector is not a valid label selector.
	InvalidSelectorReason = "InvalidSelector"
	// RolloutInProgressReason: a progressive rollout has not reached every cluster yet.
	RolloutInProgressReason = "RolloutInProgress"
	// RolloutFailedReason: the progressive rollout stopped after too many failures.
	RolloutFailedReason = "RolloutFailed"
	// TemplateErrorReason: the valuesTemplate does not parse or fails to render.
	TemplateErrorReason = "TemplateError"
	// PausedReason: reconciliation is paused.
	PausedReason = "Paused"
	// NotPausedReason: reconciliation is not paused.
	NotPausedReason = "NotPaused"
	// DeletingReason: the object is being deleted and its releases uninstalled.
	DeletingReason = "Deleting"
)

// HelmChartProxySpec selects clusters and says which chart, with which values, each of them runs.
type HelmChartProxySpec struct {
	// clusterSelector selects Cluster API Clusters in the proxy's namespace by label. An empty
	// selector selects every Cluster in the namespace.
	ClusterSelector metav1.LabelSelector `json:"clusterSelector"`

	// releaseName is the Helm release's name in every cluster; the proxy's name when empty.
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`

	// valuesTemplate is a Go template rendering the release's values (YAML) for each cluster.
	// It sees the cluster's objects as their full content: .Cluster (the CAPI Cluster),
	// .ControlPlane and .InfraCluster (the objects the Cluster references; empty when it
	// references none), so {{ .Cluster.metadata.name }} and
	// {{ index .Cluster.metadata.labels "env" }} work. The functions are Sprig's repeatable
	// ones, without access to the environment, the network, files, clocks or randomness.
	// +optional
	ValuesTemplate string `json:"valuesTemplate,omitempty"`

	// rollout makes a change of the proxy reach the clusters it already runs in batch by batch,
	// each batch only after the previous one is healthy. Without it every cluster changes at
	// once. Clusters the proxy newly selects install at once either way.
	// +optional
	Rollout *Rollout `json:"rollout,omitempty"`

	// ReleaseSpec is the chart, its source and Helm's options.
	ReleaseSpec `json:",inline"`
}

// Rollout configures a progressive rollout of changes across clusters.
type Rollout struct {
	// batchSize is how many clusters change at once (the most that may be unavailable because
	// of the change); 1 when unset.
	// +kubebuilder:validation:Minimum=1
	// +optional
	BatchSize int32 `json:"batchSize,omitempty"`

	// pauseBetweenBatches is how long to wait after a batch is healthy before the next starts.
	// +optional
	PauseBetweenBatches *metav1.Duration `json:"pauseBetweenBatches,omitempty"`

	// healthTimeout is how long a changed cluster may take to become healthy (release Ready
	// and its Deployments, StatefulSets and DaemonSets available) before it counts as failed;
	// 5m when unset.
	// +optional
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`

	// maxFailures is how many clusters may fail before the rollout stops; 0 stops at the first
	// failure.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxFailures int32 `json:"maxFailures,omitempty"`

	// rollbackOnFailure rolls the clusters this rollout changed back to the Helm revision they
	// ran before, once the rollout stops.
	// +optional
	RollbackOnFailure bool `json:"rollbackOnFailure,omitempty"`
}

// Rollout phases.
const (
	// RolloutProgressing: a batch is changing or being checked.
	RolloutProgressing = "Progressing"
	// RolloutPaused: a batch is healthy; waiting pauseBetweenBatches before the next.
	RolloutPaused = "Paused"
	// RolloutComplete: every selected cluster runs the proxy's current spec.
	RolloutComplete = "Complete"
	// RolloutFailed: more than maxFailures clusters failed; no further cluster is changed.
	RolloutFailed = "Failed"
	// RolloutRolledBack: the rollout failed and the clusters it changed were rolled back.
	RolloutRolledBack = "RolledBack"
)

// RolloutStatus is the state of the rollout of one generation of the proxy. It is what a
// restarted manager resumes from.
type RolloutStatus struct {
	// generation of the proxy being rolled out.
	Generation int64 `json:"generation"`
	// phase is Progressing, Paused, Complete, Failed or RolledBack.
	Phase string `json:"phase"`
	// updated are the clusters given the new spec so far, in the order they were.
	// +optional
	Updated []string `json:"updated,omitempty"`
	// failed are the updated clusters that failed (install error or not healthy in time).
	// +optional
	Failed []string `json:"failed,omitempty"`
	// batchStartedAt is when the current batch was given the new spec.
	// +optional
	BatchStartedAt *metav1.Time `json:"batchStartedAt,omitempty"`
	// batchHealthyAt is when the current batch became healthy; the next starts
	// pauseBetweenBatches later.
	// +optional
	BatchHealthyAt *metav1.Time `json:"batchHealthyAt,omitempty"`
	// message says what the rollout waits for or why it stopped.
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterRelease is the state of the proxy's release in one cluster.
type ClusterRelease struct {
	// cluster is the CAPI Cluster's name.
	Cluster string `json:"cluster"`
	// revision is the Helm revision installed.
	// +optional
	Revision int32 `json:"revision,omitempty"`
	// chartVersion is the chart version installed.
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`
	// ready is whether the release is Ready for its current spec.
	Ready bool `json:"ready"`
}

// HelmChartProxyStatus is what the proxy's reconciler observed.
type HelmChartProxyStatus struct {
	// observedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// matchingClusters are the names of the Clusters the selector matches, sorted.
	// +optional
	MatchingClusters []string `json:"matchingClusters,omitempty"`

	// readyClusters counts the matching clusters whose release is Ready.
	// +optional
	ReadyClusters int32 `json:"readyClusters"`

	// clusters are the proxy's releases, one per selected cluster: which revision and chart
	// version each runs.
	// +listType=map
	// +listMapKey=cluster
	// +optional
	Clusters []ClusterRelease `json:"clusters,omitempty"`

	// rollout is the state of the progressive rollout of the current generation; nil without
	// spec.rollout.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`

	// conditions: Ready, ValuesRendered, Paused.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// HelmChartProxy installs a Helm chart into every Cluster API Cluster its selector matches, through
// one HelmReleaseProxy per cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="the name of a HelmChartProxy is at most 63 characters: it is a label value on its HelmReleaseProxies"
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move="
// +kubebuilder:resource:path=helmchartproxies,shortName=fhcp,categories=flotilla
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.spec.chartName`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.readyClusters`,description="Clusters whose release is Ready"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HelmChartProxy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HelmChartProxySpec   `json:"spec,omitempty"`
	Status HelmChartProxyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// HelmChartProxyList is a list of HelmChartProxies.
type HelmChartProxyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmChartProxy `json:"items"`
}
