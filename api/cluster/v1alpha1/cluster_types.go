package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// ClusterFinalizer lets the Cluster reconciler delete the CAPI objects it created before the
// Cluster goes away.
const ClusterFinalizer = "cluster.flotilla.dev/cluster"

// ClusterNameLabel is set on every object Flotilla creates for a Cluster, with the Cluster's name.
const ClusterNameLabel = "cluster.flotilla.dev/cluster-name"

// ManagementLabel is set on the CAPI Cluster of a management cluster, with value "true".
const ManagementLabel = "cluster.flotilla.dev/management"

// WorkerNodeGroupLabel is set on the MachineDeployment and LocalMachineTemplate of a worker node
// group, with the group's name.
const WorkerNodeGroupLabel = "cluster.flotilla.dev/worker-node-group"

// CAPIPausedAnnotation is set on a Cluster by the Cluster reconciler when it finds the Cluster's
// CAPI Cluster paused by someone other than Flotilla, as `clusterctl move` does. While it is set
// the reconciler writes nothing but status, and does not recreate a missing CAPI Cluster; it
// removes the annotation once the CAPI Cluster exists again and is no longer paused. Together
// with clusterctl's block-move annotation this keeps the reconcilers of both management clusters
// out of the way while a move copies and deletes the objects.
const CAPIPausedAnnotation = "cluster.flotilla.dev/capi-paused"

// MovingAnnotation is set on the Clusters of a namespace by the CLI before it moves them to
// another management cluster with clusterctl move, and removed from the copies once the move is
// over. While it is set the Cluster reconciler holds as it does for CAPIPausedAnnotation, which it
// sets, and lets go of clusterctl's block-move annotation at once: the mover then finds nothing
// to wait for, instead of finding block-move still there and waiting 5 s to look again.
const MovingAnnotation = "cluster.flotilla.dev/moving"

// EndpointServingAnnotation is set on a CAPI Cluster by the manager once the Cluster's control
// plane endpoint serves, for infrastructure that is provisioned before its API server runs (a
// Packet cluster's elastic IP before its devices boot). Until then Cluster API's cluster cache
// does not try to connect: a failed first attempt would make it wait 30 s before the next.
const EndpointServingAnnotation = "cluster.flotilla.dev/endpoint-serving"

// Kinds a Ref can name.
const (
	// LocalDatacenterConfigKind is the local provider's datacenter config
	// (infrastructure.flotilla.dev), valid in spec.datacenterRef.
	LocalDatacenterConfigKind = "LocalDatacenterConfig"
	// LocalMachineConfigKind is the local provider's machine config (infrastructure.flotilla.dev),
	// valid in a machineGroupRef of a cluster whose datacenter is a LocalDatacenterConfig.
	LocalMachineConfigKind = "LocalMachineConfig"
)

// Defaults of spec.clusterNetwork, set by the webhook.
const (
	// DefaultPodCIDR is the Pod range of a cluster that names none.
	DefaultPodCIDR = "192.168.0.0/16"
	// DefaultServiceCIDR is the Service range of a cluster that names none. It matches the
	// LocalControlPlane's default --service-cluster-ip-range.
	DefaultServiceCIDR = "10.96.0.0/12"
)

// Condition types of a Cluster.
const (
	// ReadyCondition is True when the control plane is available and every worker node group has
	// all its Nodes ready.
	ReadyCondition = "Ready"

	// ControlPlaneReadyCondition is True when the cluster's control plane serves requests.
	ControlPlaneReadyCondition = "ControlPlaneReady"

	// WorkersReadyCondition is True when every worker node group has the requested number of
	// ready Nodes.
	WorkersReadyCondition = "WorkersReady"

	// PausedCondition is True while reconciliation is paused: by the cluster.x-k8s.io/paused
	// annotation on the Cluster, or because the CAPI Cluster is paused (clusterctl move).
	PausedCondition = "Paused"
)

// Condition reasons of a Cluster.
const (
	// ReadyReason: the condition holds.
	ReadyReason = "Ready"
	// WaitingForControlPlaneReason: the control plane is being created or is not serving yet.
	WaitingForControlPlaneReason = "WaitingForControlPlane"
	// WaitingForWorkersReason: fewer worker Nodes are ready than requested.
	WaitingForWorkersReason = "WaitingForWorkers"
	// InvalidSpecReason: the spec references something that does not exist or is not usable;
	// the message names the field.
	InvalidSpecReason = "InvalidSpec"
	// DeletingReason: the cluster is being deleted.
	DeletingReason = "Deleting"
	// PausedReason: reconciliation is paused on the cluster.
	PausedReason = "Paused"
	// NotPausedReason: reconciliation is not paused.
	NotPausedReason = "NotPaused"
	// UpgradingReason: the control plane or some workers do not run the requested Kubernetes
	// version yet.
	UpgradingReason = "Upgrading"

	// Reasons of a Packet cluster's ControlPlaneReady and WorkersReady (and so Ready), which
	// say how far its Cluster API machines are.

	// WaitingForInfrastructureReason: the cluster's infrastructure (the PacketCluster's elastic
	// IP, the control plane endpoint) is not provisioned yet.
	WaitingForInfrastructureReason = "WaitingForInfrastructure"
	// DevicesProvisioningReason: Machines wait for their devices to become active.
	DevicesProvisioningReason = "DevicesProvisioning"
	// WaitingForKubeadmInitReason: the first control plane device is active, and Cluster API
	// has not yet seen kubeadm init complete (an API server at the endpoint holding the
	// kubeadm-config ConfigMap).
	WaitingForKubeadmInitReason = "WaitingForKubeadmInit"
	// WaitingForNodesReason: devices are active, and their Nodes have not registered (kubeadm
	// join) or are not healthy yet.
	WaitingForNodesReason = "WaitingForNodes"
	// MachinesFailedReason: a device failed to provision or disappeared; its Machine must be
	// replaced (a MachineHealthCheck does so).
	MachinesFailedReason = "MachinesFailed"

	// Reasons of a ClusterClass cluster's (spec.topology) ControlPlaneReady, and so Ready.

	// ProviderNotInstalledReason: the ClusterClass uses a template kind no CRD of the management
	// cluster serves; the message names the kind and how to install its provider.
	ProviderNotInstalledReason = "ProviderNotInstalled"
	// TopologyNotReconciledReason: Cluster API's topology controller could not reconcile the
	// cluster's topology (or its ClusterClass); the message holds its reason.
	TopologyNotReconciledReason = "TopologyNotReconciled"
)

// Cluster phases, a one-word summary for `flotilla get clusters`.
const (
	ClusterPhaseProvisioning = "Provisioning"
	ClusterPhaseReady        = "Ready"
	ClusterPhaseUpgrading    = "Upgrading"
	ClusterPhasePaused       = "Paused"
	ClusterPhaseDeleting     = "Deleting"
	ClusterPhaseFailed       = "Failed"
)

// ClusterSpec is the desired shape of a Kubernetes cluster.
type ClusterSpec struct {
	// management marks a management cluster: one that runs Flotilla's controllers and manages
	// itself and workload clusters. A workload cluster has management false.
	// +kubebuilder:default=false
	// +optional
	Management bool `json:"management"`

	// kubernetesVersion is the Kubernetes minor version, such as "1.36".
	// +kubebuilder:validation:Pattern=`^1\.[0-9]+$`
	KubernetesVersion string `json:"kubernetesVersion"`

	// controlPlane configures the cluster's control plane.
	ControlPlane ControlPlaneConfiguration `json:"controlPlane"`

	// workerNodeGroups are the groups of worker machines. Each becomes a MachineDeployment.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	WorkerNodeGroups []WorkerNodeGroup `json:"workerNodeGroups,omitempty"`

	// datacenterRef names the provider's datacenter config in the same namespace, such as a
	// LocalDatacenterConfig. Left out when topology names a ClusterClass instead.
	// +optional
	DatacenterRef Ref `json:"datacenterRef,omitzero"`

	// topology makes this a cluster of a Cluster API ClusterClass, of any Cluster API provider:
	// the Cluster becomes a Cluster API Cluster with spec.topology, and Cluster API's topology
	// controller creates its objects from the ClusterClass's templates. datacenterRef and every
	// machineGroupRef are then left out; each worker node group names a MachineDeployment class
	// of the ClusterClass instead (workerNodeGroups[].class). Immutable.
	// +optional
	Topology *Topology `json:"topology,omitempty"`

	// clusterNetwork holds the Pod and Service ranges of the cluster.
	// +optional
	ClusterNetwork ClusterNetwork `json:"clusterNetwork,omitempty,omitzero"`

	// managementCluster names the management cluster that manages this cluster. A management
	// cluster names itself. Defaulted by the webhook.
	// +optional
	ManagementCluster ManagementClusterRef `json:"managementCluster,omitempty,omitzero"`

	// gitOpsRef names the GitOpsConfig, in the same namespace, whose Git repository holds this
	// cluster's spec: the CLI commits the spec there and the management cluster applies what is
	// committed. Immutable.
	// +optional
	GitOpsRef *Ref `json:"gitOpsRef,omitempty"`

	// proxy is the HTTP proxy a management cluster's manager reaches registries, chart
	// repositories, Git servers and provider APIs through (HTTP_PROXY, HTTPS_PROXY and NO_PROXY
	// of its process). Management clusters only.
	// +optional
	Proxy *ProxyConfiguration `json:"proxy,omitempty"`
}

// ProxyConfiguration is an HTTP proxy and the hosts reached without it.
type ProxyConfiguration struct {
	// httpProxy is the proxy of plain http:// requests, such as http://proxy.example.com:3128.
	// +optional
	HTTPProxy string `json:"httpProxy,omitempty"`

	// httpsProxy is the proxy of https:// requests (a CONNECT tunnel), such as
	// http://proxy.example.com:3128.
	// +optional
	HTTPSProxy string `json:"httpsProxy,omitempty"`

	// noProxy are the hosts reached directly: host names (a leading dot or none matches the
	// domain's hosts too), IP addresses, CIDR blocks, with an optional :port; "*" for every host.
	// Loopback addresses and localhost are always reached directly.
	// +kubebuilder:validation:MaxItems=128
	// +optional
	NoProxy []string `json:"noProxy,omitempty"`
}

// ControlPlaneConfiguration configures a control plane.
type ControlPlaneConfiguration struct {
	// count is the number of control plane instances. The local provider runs one hosted
	// control plane per cluster.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=7
	// +optional
	Count int32 `json:"count,omitempty"`

	// machineGroupRef names the provider's machine config for control plane machines.
	// +optional
	MachineGroupRef *Ref `json:"machineGroupRef,omitempty"`

	// endpoint is the control plane's address. Chosen by the provider when empty, and fixed
	// once chosen.
	// +optional
	Endpoint *Endpoint `json:"endpoint,omitempty"`
}

// Endpoint is a host and port.
type Endpoint struct {
	// host is a hostname or IP address.
	Host string `json:"host"`
	// port is a TCP port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
}

// WorkerNodeGroup is a group of identical worker machines.
type WorkerNodeGroup struct {
	// name of the group, unique in the cluster. The MachineDeployment is named
	// <cluster>-<name>.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=40
	Name string `json:"name"`

	// count is the number of machines in the group.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	Count int32 `json:"count"`

	// machineGroupRef names the provider's machine config for the group's machines. Left out
	// in a cluster of a ClusterClass (spec.topology), whose groups name a class instead.
	// +optional
	MachineGroupRef Ref `json:"machineGroupRef,omitzero"`

	// class names the MachineDeployment class of the ClusterClass the group's machines are
	// made from, in a cluster of a ClusterClass (spec.topology) only.
	// +optional
	Class string `json:"class,omitempty"`

	// labels are set on the group's Nodes.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// nodes says what the group's machines are. Simulated (the default): Nodes that kwok plays,
	// by the thousand, whose Pods run no process. Real: for each machine a kubelet, containerd
	// and runc on the management cluster's host, in network and mount namespaces of its own,
	// whose Pods run (local provider only; see docs/local-provider.md). It cannot change: add a
	// group of the other kind instead.
	// +kubebuilder:validation:Enum=Simulated;Real
	// +optional
	Nodes NodeKind `json:"nodes,omitempty"`

	// kubernetesVersion pins the group's machines to a Kubernetes minor version, such as
	// "1.35", instead of the cluster's. Kubernetes' version skew policy bounds it: never newer
	// than the cluster's spec.kubernetesVersion and at most MaxWorkerVersionSkew minor
	// versions older; it moves up, never down. Empty: the group follows the cluster.
	// +kubebuilder:validation:Pattern=`^1\.[0-9]+$`
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
}

// NodeKind says what a worker node group's machines are.
type NodeKind string

const (
	// SimulatedNodes are Nodes simulated by kwok: no process runs for them or their Pods.
	SimulatedNodes NodeKind = "Simulated"
	// RealNodes run a kubelet, containerd and runc each, and their Pods run.
	RealNodes NodeKind = "Real"
)

// NodesOf returns the kind of a group's machines: Simulated when the group names none.
func (g WorkerNodeGroup) NodesOf() NodeKind {
	if g.Nodes == "" {
		return SimulatedNodes
	}
	return g.Nodes
}

// MaxWorkerVersionSkew is how many minor versions a worker node group may be older than its
// cluster's control plane: Kubernetes supports kubelets up to three minor versions older than
// kube-apiserver.
const MaxWorkerVersionSkew = 3

// Topology names the ClusterClass a cluster is stamped from, and the values of its variables.
type Topology struct {
	// class names the ClusterClass (cluster.x-k8s.io) in the Cluster's namespace. An admin
	// provides it, with the templates it references.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Class string `json:"class"`

	// variables are values of the ClusterClass's variables; the ClusterClass's schema of each
	// validates it, and variables left out get the ClusterClass's defaults.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Variables []TopologyVariable `json:"variables,omitempty"`
}

// TopologyVariable is the value of one ClusterClass variable.
type TopologyVariable struct {
	// name of the variable, as the ClusterClass defines it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	Name string `json:"name"`

	// value is any JSON value (a string, number, boolean, list or object) that the variable's
	// schema accepts.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	Value runtime.RawExtension `json:"value"`
}

// Ref names an object of a given kind in the same namespace.
type Ref struct {
	// kind of the object, such as LocalDatacenterConfig.
	Kind string `json:"kind"`
	// name of the object.
	Name string `json:"name"`
}

// ClusterNetwork holds a cluster's address ranges.
type ClusterNetwork struct {
	// pods are the CIDR blocks Pod IPs come from.
	// +optional
	Pods []string `json:"pods,omitempty"`
	// services are the CIDR blocks Service IPs come from.
	// +optional
	Services []string `json:"services,omitempty"`
}

// ManagementClusterRef names a management cluster.
type ManagementClusterRef struct {
	// name of the management cluster.
	Name string `json:"name"`
}

// ClusterStatus is the observed state of a Cluster.
type ClusterStatus struct {
	// phase is a one-word summary: Provisioning, Ready, Upgrading, Paused, Deleting or Failed.
	// +optional
	Phase string `json:"phase,omitempty"`

	// observedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// kubernetesVersion is the full version the control plane runs, such as v1.36.3.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`

	// workers counts the cluster's worker machines.
	// +optional
	Workers WorkerStatus `json:"workers,omitempty,omitzero"`

	// conditions are Ready, ControlPlaneReady, WorkersReady and Paused, which the Cluster
	// reconciler writes, and PackagesReady, which the packages component writes. Each writer
	// owns its conditions and server-side applies them as its field manager.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WorkerStatus counts worker machines.
type WorkerStatus struct {
	// desired is the number of workers the spec asks for.
	Desired int32 `json:"desired"`
	// ready is the number of workers whose Node is ready.
	Ready int32 `json:"ready"`
}

// Cluster is a Kubernetes cluster managed by Flotilla: a management cluster or a workload
// cluster. The Cluster reconciler turns it into Cluster API objects.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=clusters,scope=Namespaced,categories=flotilla,shortName=fc
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move-hierarchy="
// +kubebuilder:printcolumn:name="Management",type=boolean,JSONPath=`.spec.management`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Workers",type=string,JSONPath=`.status.workers.ready`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Cluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterSpec   `json:"spec,omitempty"`
	Status ClusterStatus `json:"status,omitempty"`
}

// ClusterList is a list of Clusters.
// +kubebuilder:object:root=true
type ClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Cluster `json:"items"`
}
