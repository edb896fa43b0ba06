// Package clusterspec turns a Flotilla Cluster of the Packet provider into the Cluster API
// objects that make it: a Cluster pointing at a PacketCluster and a KubeadmControlPlane, the
// control plane's PacketMachineTemplate, and per worker node group a PacketMachineTemplate, a
// KubeadmConfigTemplate and a MachineDeployment.
//
// The builders are pure: the same Cluster and configs give the same objects, with deterministic
// names (<cluster>, <cluster>-control-plane, <cluster>-<group>). Fields that CAPI's admission
// webhooks would default are set explicitly, because Flotilla runs the kubeadm providers without
// their webhooks.
//
// The kubeadm configuration is what the Packet design describes: kubeadm init on the first
// control plane device and kubeadm join on the others, the CA and token coming from Secrets
// CAPI's kubeadm providers create. The cloud-init installs containerd, kubelet and kubeadm of the
// cluster's version from pkgs.k8s.io (Ubuntu and Debian images), binds the control plane elastic
// IP to the loopback interface of control plane devices (read from the Metal metadata service)
// and registers the kubelet with provider ID equinixmetal://<device-id>, as the Equinix Metal
// cloud provider expects.
package clusterspec
