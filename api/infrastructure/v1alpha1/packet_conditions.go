package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PacketClusterFinalizer lets the PacketCluster reconciler release the elastic IP.
const PacketClusterFinalizer = "infrastructure.flotilla.dev/packetcluster"

// PacketMachineFinalizer lets the PacketMachine reconciler delete the device.
const PacketMachineFinalizer = "infrastructure.flotilla.dev/packetmachine"

// Metal API tags the provider puts on what it creates, so that it finds them again after a crash
// (find by tag before create) and so that an inventory shows whose they are. Each starts with
// PacketTagPrefix, which the tags of a PacketMachineConfig may not.
const (
	// PacketTagPrefix starts every tag the provider sets.
	PacketTagPrefix = "flotilla:"
	// PacketClusterTagPrefix + "<namespace>/<name>" is on every device and IP of a cluster.
	PacketClusterTagPrefix = "flotilla:cluster:"
	// PacketMachineTagPrefix + "<namespace>/<name>" identifies the device of a PacketMachine.
	PacketMachineTagPrefix = "flotilla:machine:"
	// PacketEndpointTagPrefix + "<namespace>/<name>" identifies the control plane elastic IP of
	// a PacketCluster.
	PacketEndpointTagPrefix = "flotilla:endpoint:"
	// PacketControlPlaneTag is on control plane devices.
	PacketControlPlaneTag = "flotilla:control-plane"
)

// Reasons of the Ready condition of PacketClusters and PacketMachines, besides those the local
// provider shares (Provisioned, WaitingForCluster, WaitingForMachine, Deleting).
const (
	// CredentialsUnavailableReason: the PacketClusterIdentity, its credentials Secret or the
	// Secret's apiKey is missing, or the API refused the key.
	CredentialsUnavailableReason = "CredentialsUnavailable"
	// IdentityNotAllowedReason: the PacketClusterIdentity the PacketCluster names does not allow
	// its namespace (spec.allowedNamespaces), or sends its key where it may not (plain http off
	// loopback); the message names the identity and the rule. No request is made with its key.
	IdentityNotAllowedReason = "IdentityNotAllowed"
	// MetalAPIErrorReason: the Metal API answered with an error that may pass (5xx, network);
	// the reconciler retries.
	MetalAPIErrorReason = "MetalAPIError"
	// RateLimitedReason: the Metal API answered 429 (rate limit or quota); the reconciler
	// retries after the Retry-After the API asked for.
	RateLimitedReason = "RateLimited"
	// InvalidSpecReason: the Metal API refused the request as invalid (unknown metro, plan,
	// operating system); the message names what it refused. Retrying does not help.
	InvalidSpecReason = "InvalidSpec"
	// WaitingForInfrastructureReason: the Cluster's infrastructure (the PacketCluster) is not
	// provisioned yet.
	WaitingForInfrastructureReason = "WaitingForInfrastructure"
	// WaitingForBootstrapDataReason: the Machine has no bootstrap data Secret yet.
	WaitingForBootstrapDataReason = "WaitingForBootstrapData"
	// DeviceProvisioningReason: the device exists and is queued or provisioning.
	DeviceProvisioningReason = "DeviceProvisioning"
	// DeviceFailedReason: the device failed to provision. Terminal: the Machine must be
	// replaced.
	DeviceFailedReason = "DeviceFailed"
	// DeviceNotFoundReason: the device recorded in providerID no longer exists.
	DeviceNotFoundReason = "DeviceNotFound"
)

// GetConditions returns the PacketCluster's conditions.
func (c *PacketCluster) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the PacketCluster's conditions.
func (c *PacketCluster) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// GetConditions returns the PacketMachine's conditions.
func (m *PacketMachine) GetConditions() []metav1.Condition { return m.Status.Conditions }

// SetConditions sets the PacketMachine's conditions.
func (m *PacketMachine) SetConditions(conditions []metav1.Condition) {
	m.Status.Conditions = conditions
}
