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

// ProcessesRunningCondition is True when every process of a real node runs: containerd,
// kubelet, and kube-proxy once kubelet has joined.
const ProcessesRunningCondition = "ProcessesRunning"

// Condition reasons of a LocalMachine with a real node.
const (
	// PrerequisiteMissingReason: a program the node needs from the host (runc, iptables) is
	// not installed; the message names the Debian package.
	PrerequisiteMissingReason = "PrerequisiteMissing"
	// BinariesMissingReason: the node programs of the Machine's version are not built; the
	// message has the command that builds them.
	BinariesMissingReason = "BinariesMissing"
	// WaitingForNodeNetworkReason: the control plane has not set up the cluster's node network
	// yet.
	WaitingForNodeNetworkReason = "WaitingForNodeNetwork"
	// NodeStartFailedReason: the node could not be set up or its processes started; the message
	// says why.
	NodeStartFailedReason = "NodeStartFailed"
	// ImageMirrorUnusableReason: the image mirror the node would pull from (the management
	// cluster's registry mirror, realnode.MirrorOf) cannot be used, or the digests its images
	// are pinned by are not recorded (`flotilla image build`); the message says why and what to
	// change.
	ImageMirrorUnusableReason = "ImageMirrorUnusable"
	// JoiningReason: the node's processes run and kubelet has not registered its Node yet.
	JoiningReason = "Joining"
	// ProcessesRunningReason: every process of the node runs.
	ProcessesRunningReason = "ProcessesRunning"
	// RestartingReason: a process exited and is started again.
	RestartingReason = "Restarting"
	// CrashLoopBackOffReason: a process keeps exiting soon after its start and waits longer
	// before each start; the message has the end of its log.
	CrashLoopBackOffReason = "CrashLoopBackOff"
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
