// Package packetmachine reconciles PacketMachines, the CAPI infrastructure machines of the Packet
// provider: one Equinix Metal device each.
//
// Once the Cluster's infrastructure is provisioned and the Machine has bootstrap data (the
// cloud-init CAPI's kubeadm bootstrap provider renders, with kubeadm init or join), the
// reconciler creates the device with that data as its userdata, tagged with the machine's
// identity. It looks for a device with that tag before creating one, so a crash between the
// create and recording spec.providerID (equinixmetal://<device-id>) never yields a second device.
// While the device is queued or provisioning the reconciler polls with a growing interval
// (a few seconds at first, at most 30 s); once it is active, it records the addresses, assigns
// the cluster's elastic IP to the first control plane device, marks the machine provisioned and
// stops polling. A device that fails to provision makes Ready False with reason DeviceFailed: a
// terminal state for the Machine to be replaced (see the conditions on PacketMachineStatus).
//
// Deleting a PacketMachine deletes its device (found by providerID and by tag); the finalizer
// stays until the API confirms.
package packetmachine
