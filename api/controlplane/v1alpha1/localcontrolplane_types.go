package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocalControlPlaneFinalizer lets the reconciler stop the control plane processes and remove
// their data before the LocalControlPlane goes away.
const LocalControlPlaneFinalizer = "controlplane.flotilla.dev/localcontrolplane"

// Condition types of a LocalControlPlane.
const (
	// AvailableCondition is True when kube-apiserver answers /readyz. CAPI mirrors it into the
	// Cluster's ControlPlaneAvailable condition.
	AvailableCondition = "Available"

	// ProcessesRunningCondition is True when every process of the control plane runs.
	ProcessesRunningCondition = "ProcessesRunning"

	// CertificatesAvailableCondition is True when the PKI exists and the <cluster>-ca and
	// <cluster>-kubeconfig Secrets hold it.
	CertificatesAvailableCondition = "CertificatesAvailable"
)

// Condition reasons of a LocalControlPlane.
const (
	// AvailableReason: the API server is ready.
	AvailableReason = "Available"
	// StartingReason: processes were started and the API server is not ready yet.
	StartingReason = "Starting"
	// ProcessesRunningReason: every process runs.
	ProcessesRunningReason = "ProcessesRunning"
	// ProcessStartFailedReason: a process could not be started; the message says why.
	ProcessStartFailedReason = "ProcessStartFailed"
	// BinariesMissingReason: the binaries for the requested version are not on this machine.
	BinariesMissingReason = "BinariesMissing"
	// CertificatesAvailableReason: the PKI and its Secrets exist.
	CertificatesAvailableReason = "CertificatesAvailable"
	// WaitingForClusterReason: the owning CAPI Cluster is not set yet.
	WaitingForClusterReason = "WaitingForCluster"
	// PausedReason: reconciliation is paused.
	PausedReason = "Paused"
	// DeletingReason: the control plane is being stopped.
	DeletingReason = "Deleting"
)

// LocalControlPlaneSpec is a hosted control plane run as local processes: etcd,
// kube-apiserver, and optionally kube-controller-manager, kube-scheduler and kwok.
type LocalControlPlaneSpec struct {
	// version is the Kubernetes version, such as v1.36.3.
	// +kubebuilder:validation:Pattern=`^v1\.[0-9]+\.[0-9]+$`
	Version string `json:"version"`

	// controlPlaneEndpoint is where kube-apiserver serves. Chosen by the reconciler (a free
	// loopback port) when empty and fixed after that.
	// +optional
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`

	// controllerManager runs kube-controller-manager.
	// +kubebuilder:default=true
	// +optional
	ControllerManager *bool `json:"controllerManager,omitempty"`

	// scheduler runs kube-scheduler.
	// +kubebuilder:default=true
	// +optional
	Scheduler *bool `json:"scheduler,omitempty"`

	// serviceClusterIPRange is kube-apiserver's --service-cluster-ip-range.
	// +kubebuilder:default="10.96.0.0/12"
	// +optional
	ServiceClusterIPRange string `json:"serviceClusterIPRange,omitempty"`

	// realNodes readies the control plane for real nodes: the cluster's node network on the
	// host, kube-apiserver advertised at its gateway and authorizing kubelets, and
	// kube-controller-manager signing kubelet client certificates and giving Nodes Pod ranges.
	// +optional
	RealNodes *RealNodesSpec `json:"realNodes,omitempty"`
}

// RealNodesSpec is what a control plane needs to know about its cluster's real nodes.
type RealNodesSpec struct {
	// network is the IPv4 range of the node network; empty: a free one is chosen.
	// +optional
	Network string `json:"network,omitempty"`
	// podCIDR is the cluster's Pod range; each Node gets a /24 of it.
	PodCIDR string `json:"podCIDR"`
	// imageMirror is the loopback host:port of the registry the nodes pull from while the
	// management cluster has no registry mirror (realnode.MirrorOf).
	ImageMirror string `json:"imageMirror"`
}

// APIEndpoint is a reachable Kubernetes API endpoint.
type APIEndpoint struct {
	// host is the hostname or IP the API server serves on.
	// +optional
	Host string `json:"host,omitempty"`
	// port is the port the API server serves on.
	// +optional
	Port int32 `json:"port,omitempty"`
}

// Initialization reports the CAPI control plane contract's initialization state.
type Initialization struct {
	// controlPlaneInitialized is true once the API server has served /readyz once.
	// +optional
	ControlPlaneInitialized *bool `json:"controlPlaneInitialized,omitempty"`
}

// LocalControlPlaneStatus is the observed state of a LocalControlPlane.
type LocalControlPlaneStatus struct {
	// initialization reports controlPlaneInitialized per the CAPI contract.
	// +optional
	Initialization Initialization `json:"initialization,omitempty,omitzero"`

	// version is the Kubernetes version the running API server reports.
	// +optional
	Version string `json:"version,omitempty"`

	// externalManagedControlPlane is always true, per the CAPI contract: the control plane runs
	// as processes, with no Node in the cluster. It tells Cluster API that deleting a worker
	// Machine may drain and delete its Node although the cluster has no control plane Machines.
	// +optional
	ExternalManagedControlPlane *bool `json:"externalManagedControlPlane,omitempty"`

	// observedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// nodeNetwork is the node network of a control plane with real nodes: its first address
	// is their gateway.
	// +optional
	NodeNetwork string `json:"nodeNetwork,omitempty"`

	// conditions: Available, ProcessesRunning, CertificatesAvailable.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// LocalControlPlane is the CAPI control plane of the local provider: a hosted control plane
// whose processes run on the machine of the manager that reconciles it.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=localcontrolplanes,scope=Namespaced,categories=cluster-api,shortName=lcp
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:metadata:labels="cluster.x-k8s.io/provider=control-plane-local"
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`
// +kubebuilder:printcolumn:name="Initialized",type=boolean,JSONPath=`.status.initialization.controlPlaneInitialized`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.controlPlaneEndpoint.port`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type LocalControlPlane struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LocalControlPlaneSpec   `json:"spec,omitempty"`
	Status LocalControlPlaneStatus `json:"status,omitempty"`
}

// LocalControlPlaneList is a list of LocalControlPlanes.
// +kubebuilder:object:root=true
type LocalControlPlaneList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LocalControlPlane `json:"items"`
}
