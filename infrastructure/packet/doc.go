// Package packet is the Packet (Equinix Metal) infrastructure provider: PacketCluster and
// PacketMachine reconcilers (reconcilers/) on a small typed Metal API client (metal/), proven
// against a simulator of the same HTTP API (metalsim/).
//
// Machines are bootstrapped by Cluster API's kubeadm bootstrap and control plane providers,
// which run in the same manager (the "capi" component): they write the CA, the kubeadm token,
// the admin kubeconfig and the cloud-init with kubeadm init or join; the PacketMachine hands that
// cloud-init to its device as userdata. Setup registers the reconcilers.
package packet
