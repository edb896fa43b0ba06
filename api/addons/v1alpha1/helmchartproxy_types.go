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

	// ReleaseSpec is the chart, its source and Helm's options.
	ReleaseSpec `json:",inline"`
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
// +kubebuilder:resource:path=helmchartproxies,shortName=hcp,categories=flotilla
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
