package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The Packet provider: clusters on Equinix Metal (formerly Packet) bare-metal devices, created
// through the Metal API and bootstrapped with kubeadm (CAPI's kubeadm providers) via cloud-init.

// DefaultPacketAPIURL is the public Equinix Metal API.
const DefaultPacketAPIURL = "https://api.equinix.com/metal/v1"

// PacketCredentialsNamespace is where the Secrets holding Metal API keys live. Cluster creators
// get no access to it (see the cluster creator role), so they can use a key without reading it.
const PacketCredentialsNamespace = "flotilla-system"

// DefaultPacketClusterIdentity is the PacketClusterIdentity a PacketDatacenterConfig or a
// PacketCluster uses when its spec.identityRef names none.
const DefaultPacketClusterIdentity = "default"

// DefaultPacketCredentialsSecret is the Secret in PacketCredentialsNamespace that `flotilla
// create cluster` stores the key of the default PacketClusterIdentity in.
const DefaultPacketCredentialsSecret = "packet-credentials" //nolint:gosec // a Secret's name, not a credential

// PacketAPIKeySecretKey is the key of the API key in a credentials Secret.
const PacketAPIKeySecretKey = "apiKey"

// PacketProviderIDPrefix starts the provider ID of every PacketMachine: equinixmetal://<device-id>,
// as the Equinix Metal cloud provider sets it on Nodes.
const PacketProviderIDPrefix = "equinixmetal://"

// VIP managers: what keeps the control plane's elastic IP on a healthy control plane device.
const (
	// VIPManagerKubeVIP: kube-vip on the control plane nodes announces the elastic IP.
	VIPManagerKubeVIP = "KUBE_VIP"
	// VIPManagerCPEM: the Equinix Metal cloud provider (CPEM) moves the elastic IP.
	VIPManagerCPEM = "CPEM"
)

// PacketDatacenterConfigSpec is where and how a Packet cluster's devices are created.
type PacketDatacenterConfigSpec struct {
	// identityRef names the PacketClusterIdentity whose Metal API key, and the API endpoint it
	// is sent to, the cluster's devices and IPs are created with; "default" when empty. The
	// identity must allow the config's namespace. Admins own identities: who writes a
	// datacenter config chooses neither the key nor where it goes.
	// +optional
	IdentityRef *PacketClusterIdentityReference `json:"identityRef,omitempty"`

	// projectID is the Metal project that owns the devices and IP reservations.
	// +kubebuilder:validation:MinLength=1
	ProjectID string `json:"projectID"`

	// metro is the metro code devices are created in, such as "da".
	// +kubebuilder:validation:Pattern=`^[a-z]{2}$`
	Metro string `json:"metro"`

	// facility pins devices to one facility of the metro, such as "da11".
	// +optional
	Facility string `json:"facility,omitempty"`

	// vipManager keeps the control plane elastic IP on a healthy control plane device:
	// KUBE_VIP (default) or CPEM.
	// +kubebuilder:validation:Enum=KUBE_VIP;CPEM
	// +kubebuilder:default=KUBE_VIP
	// +optional
	VIPManager string `json:"vipManager,omitempty"`
}

// PacketClusterIdentityReference names a PacketClusterIdentity.
type PacketClusterIdentityReference struct {
	// name of the PacketClusterIdentity.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// PacketDatacenterConfig is the Packet provider's datacenter config, referenced by a Flotilla
// Cluster's spec.datacenterRef.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=packetdatacenterconfigs,scope=Namespaced,categories=flotilla
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move="
type PacketDatacenterConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PacketDatacenterConfigSpec `json:"spec,omitempty"`
}

// PacketDatacenterConfigList is a list of PacketDatacenterConfigs.
// +kubebuilder:object:root=true
type PacketDatacenterConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketDatacenterConfig `json:"items"`
}

// PacketMachineConfigSpec is the kind of device a node group runs on.
type PacketMachineConfigSpec struct {
	// plan is the device type, such as "c3.small.x86".
	// +kubebuilder:validation:MinLength=1
	Plan string `json:"plan"`

	// os is the operating system slug, such as "ubuntu_24_04".
	// +kubebuilder:default=ubuntu_24_04
	// +optional
	OS string `json:"os,omitempty"`

	// billingCycle is hourly (default), daily, monthly or yearly.
	// +kubebuilder:validation:Enum=hourly;daily;monthly;yearly
	// +kubebuilder:default=hourly
	// +optional
	BillingCycle string `json:"billingCycle,omitempty"`

	// sshAuthorizedKeys are public keys allowed to log in as the default user.
	// +optional
	SSHAuthorizedKeys []string `json:"sshAuthorizedKeys,omitempty"`

	// tags are added to every device.
	// +optional
	Tags []string `json:"tags,omitempty"`

	// hardwareReservationID places devices on reserved hardware; "next-available" takes any.
	// +optional
	HardwareReservationID string `json:"hardwareReservationID,omitempty"`
}

// PacketMachineConfig is the Packet provider's machine config, referenced by the control plane
// and worker node groups of a Flotilla Cluster.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=packetmachineconfigs,scope=Namespaced,categories=flotilla
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io/move="
type PacketMachineConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PacketMachineConfigSpec `json:"spec,omitempty"`
}

// PacketMachineConfigList is a list of PacketMachineConfigs.
// +kubebuilder:object:root=true
type PacketMachineConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketMachineConfig `json:"items"`
}

// PacketClusterSpec is the infrastructure of a Packet cluster: a project, a metro, and an
// elastic IP as the control plane endpoint.
type PacketClusterSpec struct {
	// identityRef names the PacketClusterIdentity whose key, sent to its API endpoint, the
	// cluster's devices and IPs are managed with; "default" when empty. The identity must allow
	// the PacketCluster's namespace, or no request is made.
	// +optional
	IdentityRef *PacketClusterIdentityReference `json:"identityRef,omitempty"`

	// projectID is the Metal project of the cluster's devices and IPs.
	// +kubebuilder:validation:MinLength=1
	ProjectID string `json:"projectID"`

	// metro is the metro code, such as "da".
	// +kubebuilder:validation:Pattern=`^[a-z]{2}$`
	Metro string `json:"metro"`

	// facility pins devices to one facility of the metro.
	// +optional
	Facility string `json:"facility,omitempty"`

	// vipManager is KUBE_VIP or CPEM.
	// +kubebuilder:validation:Enum=KUBE_VIP;CPEM
	// +kubebuilder:default=KUBE_VIP
	// +optional
	VIPManager string `json:"vipManager,omitempty"`

	// controlPlaneEndpoint is the elastic IP reserved for the API server and port 6443; set by
	// the provider when empty.
	// +optional
	ControlPlaneEndpoint APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`
}

// PacketFailureDomain is a failure domain in the shape of the CAPI contract.
type PacketFailureDomain struct {
	// name of the failure domain: the metro (or facility) code.
	Name string `json:"name"`
	// controlPlane says control plane machines may be placed there.
	// +optional
	ControlPlane *bool `json:"controlPlane,omitempty"`
	// attributes describe the domain.
	// +optional
	Attributes map[string]string `json:"attributes,omitempty"`
}

// PacketElasticIP is the IP reservation backing the control plane endpoint.
type PacketElasticIP struct {
	// id of the IP reservation.
	ID string `json:"id"`
	// address reserved.
	Address string `json:"address"`
}

// PacketClusterStatus is the observed state of a PacketCluster.
type PacketClusterStatus struct {
	// initialization.provisioned is true once the control plane endpoint is reserved.
	// +optional
	Initialization Initialization `json:"initialization,omitempty,omitzero"`
	// failureDomains lists where machines can go: the cluster's metro.
	// +optional
	FailureDomains []PacketFailureDomain `json:"failureDomains,omitempty"`
	// elasticIP is the reservation of the control plane endpoint.
	// +optional
	ElasticIP *PacketElasticIP `json:"elasticIP,omitempty"`
	// conditions are Ready and Paused.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PacketCluster is the CAPI infrastructure cluster of the Packet provider.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=packetclusters,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:metadata:labels="cluster.x-k8s.io/provider=infrastructure-packet"
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.controlPlaneEndpoint.host`
// +kubebuilder:printcolumn:name="Metro",type=string,JSONPath=`.spec.metro`
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=`.status.initialization.provisioned`
type PacketCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PacketClusterSpec   `json:"spec,omitempty"`
	Status PacketClusterStatus `json:"status,omitempty"`
}

// PacketClusterList is a list of PacketClusters.
// +kubebuilder:object:root=true
type PacketClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketCluster `json:"items"`
}

// PacketMachineSpec is one device.
type PacketMachineSpec struct {
	// providerID is equinixmetal://<device-id>, set once the device exists.
	// +optional
	ProviderID string `json:"providerID,omitempty"`

	// plan is the device type, such as "c3.small.x86".
	// +kubebuilder:validation:MinLength=1
	Plan string `json:"plan"`

	// os is the operating system slug.
	// +kubebuilder:default=ubuntu_24_04
	// +optional
	OS string `json:"os,omitempty"`

	// billingCycle is hourly, daily, monthly or yearly.
	// +kubebuilder:validation:Enum=hourly;daily;monthly;yearly
	// +kubebuilder:default=hourly
	// +optional
	BillingCycle string `json:"billingCycle,omitempty"`

	// sshKeys are project SSH key IDs installed on the device.
	// +optional
	SSHKeys []string `json:"sshKeys,omitempty"`

	// tags are added to the device, after the provider's own.
	// +optional
	Tags []string `json:"tags,omitempty"`

	// hardwareReservationID places the device on reserved hardware.
	// +optional
	HardwareReservationID string `json:"hardwareReservationID,omitempty"`
}

// PacketMachineStatus is the observed state of a PacketMachine.
type PacketMachineStatus struct {
	// initialization.provisioned is true once the device is active.
	// +optional
	Initialization Initialization `json:"initialization,omitempty,omitzero"`
	// addresses of the device: ExternalIP and InternalIP.
	// +optional
	Addresses []MachineAddress `json:"addresses,omitempty"`
	// instanceState is the device's state in the Metal API: queued, provisioning, active,
	// failed...
	// +optional
	InstanceState string `json:"instanceState,omitempty"`
	// failureDomain is the metro (or facility) the device is in.
	// +optional
	FailureDomain string `json:"failureDomain,omitempty"`
	// conditions are Ready and Paused. Ready False with reason DeviceFailed is terminal: the
	// device failed to provision and the Machine should be replaced (a MachineHealthCheck with
	// an unhealthyMachineConditions rule on InfrastructureReady does that).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PacketMachine is the CAPI infrastructure machine of the Packet provider: one device.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=packetmachines,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:metadata:labels="cluster.x-k8s.io/provider=infrastructure-packet"
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.metadata.labels['cluster\.x-k8s\.io/cluster-name']`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.instanceState`
// +kubebuilder:printcolumn:name="ProviderID",type=string,JSONPath=`.spec.providerID`
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=`.status.initialization.provisioned`
type PacketMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PacketMachineSpec   `json:"spec,omitempty"`
	Status PacketMachineStatus `json:"status,omitempty"`
}

// PacketMachineList is a list of PacketMachines.
// +kubebuilder:object:root=true
type PacketMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketMachine `json:"items"`
}

// PacketMachineTemplateResource is the PacketMachine a template stamps out.
type PacketMachineTemplateResource struct {
	Spec PacketMachineSpec `json:"spec"`
}

// PacketMachineTemplateSpec holds the template.
type PacketMachineTemplateSpec struct {
	Template PacketMachineTemplateResource `json:"template"`
}

// PacketMachineTemplate is the template of the PacketMachines of a control plane or a
// MachineDeployment.
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=packetmachinetemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:metadata:labels="cluster.x-k8s.io/provider=infrastructure-packet"
// +kubebuilder:metadata:labels="clusterctl.cluster.x-k8s.io="
type PacketMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PacketMachineTemplateSpec `json:"spec,omitempty"`
}

// PacketMachineTemplateList is a list of PacketMachineTemplates.
// +kubebuilder:object:root=true
type PacketMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketMachineTemplate `json:"items"`
}

// PacketClusterIdentitySpec binds a Metal API key to the API endpoint it is sent to and to the
// namespaces whose clusters may use it.
type PacketClusterIdentitySpec struct {
	// apiURL is the Metal API root, including /metal/v1, that the key is sent to: an https URL,
	// or an http URL of a loopback address (a simulator on the management cluster's machine,
	// `flotilla dev metal-api`).
	// +kubebuilder:default="https://api.equinix.com/metal/v1"
	// +kubebuilder:validation:Pattern=`^https?://`
	// +optional
	APIURL string `json:"apiURL,omitempty"`

	// credentialsSecretName is the Secret in flotilla-system whose "apiKey" holds the Metal API
	// key.
	// +kubebuilder:validation:MinLength=1
	CredentialsSecretName string `json:"credentialsSecretName"`

	// allowedNamespaces are the namespaces whose PacketDatacenterConfigs and PacketClusters may
	// use the identity. Absent: no namespace. Empty ({}): every namespace. Otherwise a
	// namespace named in list, or whose labels match selector.
	// +optional
	AllowedNamespaces *AllowedNamespaces `json:"allowedNamespaces,omitempty"`
}

// AllowedNamespaces selects namespaces by name or by label; a namespace either names or label
// matches is allowed.
type AllowedNamespaces struct {
	// list names namespaces.
	// +listType=set
	// +optional
	List []string `json:"list,omitempty"`

	// selector selects namespaces by their labels. An empty selector ({}) selects every
	// namespace.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// PacketClusterIdentity is an admin's Metal API credential for Packet clusters: the key (in a
// Secret in flotilla-system), the API endpoint it is sent to, and the namespaces allowed to use
// it. Cluster-scoped: people who create clusters in a namespace name an identity in their
// PacketDatacenterConfig, and cannot write one (the cluster creator role grants none).
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=packetclusteridentities,scope=Cluster,categories=flotilla
// +kubebuilder:printcolumn:name="API",type=string,JSONPath=`.spec.apiURL`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.credentialsSecretName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type PacketClusterIdentity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PacketClusterIdentitySpec `json:"spec,omitempty"`
}

// PacketClusterIdentityList is a list of PacketClusterIdentities.
// +kubebuilder:object:root=true
type PacketClusterIdentityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PacketClusterIdentity `json:"items"`
}

// addPacketKnownTypes registers the Packet provider's kinds.
func addPacketKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&PacketDatacenterConfig{}, &PacketDatacenterConfigList{},
		&PacketMachineConfig{}, &PacketMachineConfigList{},
		&PacketCluster{}, &PacketClusterList{},
		&PacketMachine{}, &PacketMachineList{},
		&PacketMachineTemplate{}, &PacketMachineTemplateList{},
		&PacketClusterIdentity{}, &PacketClusterIdentityList{},
	)
	return nil
}
