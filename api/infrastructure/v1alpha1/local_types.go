package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocalMachineFinalizer lets the LocalMachine reconciler remove the simulated Node before the
// LocalMachine goes away.
const LocalMachineFinalizer = "infrastructure.flotilla.dev/localmachine"

// SimulatedNodeLabel marks Nodes that the local provider simulates with kwok, with value "true".
const SimulatedNodeLabel = "flotilla.dev/simulated"

// KwokNodeAnnotation is the annotation kwok selects the Nodes it manages by.
const KwokNodeAnnotation = "kwok.x-k8s.io/node"

// ProviderIDPrefix starts the provider ID of every local machine: local://<namespace>/<machine>.
const ProviderIDPrefix = "local://"

// Condition types and reasons of local infrastructure objects.
const (
	// NodeReadyCondition is True when the machine's simulated Node exists and is Ready.
	NodeReadyCondition = "NodeReady"

	// WaitingForControlPlaneReason: the workload control plane is not reachable yet.
	WaitingForControlPlaneReason = "WaitingForControlPlane"
	// WaitingForNodeReason: the Node exists but kwok has not marked it Ready yet.
	WaitingForNodeReason = "WaitingForNode"
	// NodeReadyReason: the Node is Ready.
	NodeReadyReason = "NodeReady"
)

// LocalDatacenterConfigSpec configures where and how local clusters run.
type LocalDatacenterConfigSpec struct {
	// controllerManager runs kube-controller-manager in each control plane. Switch it off for
	// large scale runs where only the API matters.
	// +kubebuilder:default=true
	// +optional
	ControllerManager *bool `json:"controllerManager,omitempty"`

	// scheduler runs kube-scheduler in each control plane.
	// +kubebuilder:default=true
	// +optional
	Scheduler *bool `json:"scheduler,omitempty"`

	// nodeNetwork is the IPv4 range of the node network of each cluster with real nodes, a
	// private range no interface or route of this machine uses (such as 10.200.0.0/24): its
	// first address is the nodes' gateway to the cluster's API server and the image mirror.
	// Empty: a free /24 of 10.200.0.0/16 is chosen per cluster.
	// +optional
	NodeNetwork string `json:"nodeNetwork,omitempty"`

	// imageMirror is the registry real nodes pull every image from, 127.0.0.1:<port> or
	// localhost:<port> of this machine: their containerd uses it as the mirror of docker.io,
	// registry.k8s.io and ghcr.io, and of nothing else. The management cluster's registry
	// mirror (the ConfigMap flotilla-system/registry-mirror), when set, takes its place.
	// Default: the embedded registry (flotilla registry start). Another port than the embedded
	// registry's is forwarded into the nodes' network, so only an admin may set one.
	// +kubebuilder:default="127.0.0.1:5001"
	// +optional
	ImageMirror string `json:"imageMirror,omitempty"`
}

// DefaultImageMirror is the image mirror of real nodes when the datacenter config names none: the
// embedded registry's default address.
const DefaultImageMirror = "127.0.0.1:5001"

// LocalDatacenterConfig is the local provider's datacenter config: clusters whose control planes
// are processes on this machine and whose workers are Nodes simulated by kwok.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=localdatacenterconfigs,scope=Namespaced,categories=flotilla
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move="
type LocalDatacenterConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LocalDatacenterConfigSpec `json:"spec,omitempty"`
}

// LocalDatacenterConfigList is a list of LocalDatacenterConfigs.
// +kubebuilder:object:root=true
type LocalDatacenterConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LocalDatacenterConfig `json:"items"`
}

// LocalMachineConfigSpec describes simulated machines.
type LocalMachineConfigSpec struct {
	// capacity is what the simulated Node reports as capacity and allocatable
	// (cpu, memory, pods). Defaults: 4 CPUs, 16Gi, 110 pods.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
}

// LocalMachineConfig is the local provider's machine config, referenced by worker node groups.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=localmachineconfigs,scope=Namespaced,categories=flotilla
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move="
type LocalMachineConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LocalMachineConfigSpec `json:"spec,omitempty"`
}

// LocalMachineConfigList is a list of LocalMachineConfigs.
// +kubebuilder:object:root=true
type LocalMachineConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LocalMachineConfig `json:"items"`
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

// Initialization reports the CAPI provider contract's initialization state.
type Initialization struct {
	// provisioned is true once the infrastructure is ready.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// LocalClusterSpec is the infrastructure of a local cluster. There is none to create: the
// hosted control plane provides the endpoint.
type LocalClusterSpec struct {
	// controlPlaneEndpoint is empty for local clusters; the LocalControlPlane sets it.
	// +optional
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`
}

// LocalClusterStatus is the observed state of a LocalCluster.
type LocalClusterStatus struct {
	// initialization reports provisioned per the CAPI contract.
	// +optional
	Initialization Initialization `json:"initialization,omitempty,omitzero"`
	// conditions of the LocalCluster.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// LocalCluster is the CAPI infrastructure cluster of the local provider.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=localclusters,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:metadata:labels="cluster.x-k8s.io/provider=infrastructure-local"
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=`.status.initialization.provisioned`
type LocalCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LocalClusterSpec   `json:"spec,omitempty"`
	Status LocalClusterStatus `json:"status,omitempty"`
}

// LocalClusterList is a list of LocalClusters.
// +kubebuilder:object:root=true
type LocalClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LocalCluster `json:"items"`
}

// LocalMachineSpec is a worker machine: a Node that kwok simulates, or a real node.
type LocalMachineSpec struct {
	// providerID is local://<namespace>/<machine>, set by the reconciler.
	// +optional
	ProviderID string `json:"providerID,omitempty"`

	// node says what the machine's Node is: Simulated by kwok (the default), or Real, a
	// kubelet, containerd and runc on the manager's host (package realnode).
	// +kubebuilder:validation:Enum=Simulated;Real
	// +optional
	Node NodeKind `json:"node,omitempty"`

	// capacity of the simulated Node (cpu, memory, pods); a real node reports the host's.
	// +optional
	Capacity corev1.ResourceList `json:"capacity,omitempty"`

	// nodeLabels are set on the simulated Node: the labels of the machine's worker node group.
	// +optional
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
}

// NodeKind says what a LocalMachine's Node is.
type NodeKind string

const (
	// SimulatedNode is a Node that kwok simulates.
	SimulatedNode NodeKind = "Simulated"
	// RealNode is a kubelet, containerd and runc on the manager's host.
	RealNode NodeKind = "Real"
)

// MachineAddress is an address of a machine.
type MachineAddress struct {
	// type is the address type, such as InternalIP or Hostname.
	Type string `json:"type"`
	// address is the address.
	Address string `json:"address"`
}

// LocalMachineStatus is the observed state of a LocalMachine.
type LocalMachineStatus struct {
	// initialization reports provisioned per the CAPI contract.
	// +optional
	Initialization Initialization `json:"initialization,omitempty,omitzero"`
	// nodeName is the simulated Node in the workload cluster.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// addresses of the machine.
	// +optional
	Addresses []MachineAddress `json:"addresses,omitempty"`
	// conditions of the LocalMachine: NodeReady.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// LocalMachine is the CAPI infrastructure machine of the local provider.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=localmachines,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:metadata:labels="cluster.x-k8s.io/provider=infrastructure-local"
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeName`
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=`.spec.providerID`
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=`.status.initialization.provisioned`
type LocalMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   LocalMachineSpec   `json:"spec,omitempty"`
	Status LocalMachineStatus `json:"status,omitempty"`
}

// LocalMachineList is a list of LocalMachines.
// +kubebuilder:object:root=true
type LocalMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LocalMachine `json:"items"`
}

// LocalMachineTemplateResource is the template of a LocalMachine.
type LocalMachineTemplateResource struct {
	// spec of the LocalMachines made from this template.
	Spec LocalMachineSpec `json:"spec"`
}

// LocalMachineTemplateSpec holds the template.
type LocalMachineTemplateSpec struct {
	// template for LocalMachines.
	Template LocalMachineTemplateResource `json:"template"`
}

// LocalMachineTemplate is the machine template MachineDeployments of local clusters use.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=localmachinetemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:metadata:labels="cluster.x-k8s.io/provider=infrastructure-local"
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
type LocalMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec LocalMachineTemplateSpec `json:"spec,omitempty"`
}

// LocalMachineTemplateList is a list of LocalMachineTemplates.
// +kubebuilder:object:root=true
type LocalMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LocalMachineTemplate `json:"items"`
}

// DefaultCapacity is the capacity of a simulated Node when its machine config sets none.
func DefaultCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("16Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}
