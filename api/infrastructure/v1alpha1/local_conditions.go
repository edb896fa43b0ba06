package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ReadyCondition is True when a LocalCluster or LocalMachine is provisioned. CAPI mirrors it
// into the Cluster's InfrastructureReady and the Machine's InfrastructureReady conditions.
const ReadyCondition = "Ready"

// Additional condition reasons of local infrastructure objects.
const (
	// ProvisionedReason: the infrastructure exists (for a LocalMachine: its simulated Node).
	ProvisionedReason = "Provisioned"
	// WaitingForClusterReason: the owning CAPI Cluster is not set yet.
	WaitingForClusterReason = "WaitingForCluster"
	// WaitingForMachineReason: the owning CAPI Machine is not set yet.
	WaitingForMachineReason = "WaitingForMachine"
	// NodeCreateFailedReason: the simulated Node could not be created; the message says why.
	NodeCreateFailedReason = "NodeCreateFailed"
	// DeletingReason: the object is being deleted.
	DeletingReason = "Deleting"
)

// NodeAddressIP is the InternalIP of every simulated Node and LocalMachine. A simulated Node
// has no network of its own: kwok, which plays its kubelet, runs on the manager's host and is
// reached over loopback, so this is the one address that is both true and reachable (kwok
// clusters likewise give all Nodes the kwok host's IP). The Hostname address is the Node name.
const NodeAddressIP = "127.0.0.1"

// MachineNameAnnotation on a simulated Node names the LocalMachine that created it,
// as <namespace>/<name>.
const MachineNameAnnotation = "infrastructure.flotilla.dev/local-machine"

// GetConditions returns the conditions of the LocalCluster (CAPI's conditions.Getter).
func (c *LocalCluster) GetConditions() []metav1.Condition {
	return c.Status.Conditions
}

// SetConditions sets the conditions of the LocalCluster (CAPI's conditions.Setter).
func (c *LocalCluster) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// GetConditions returns the conditions of the LocalMachine (CAPI's conditions.Getter).
func (m *LocalMachine) GetConditions() []metav1.Condition {
	return m.Status.Conditions
}

// SetConditions sets the conditions of the LocalMachine (CAPI's conditions.Setter).
func (m *LocalMachine) SetConditions(conditions []metav1.Condition) {
	m.Status.Conditions = conditions
}
