// Package clusterspec is the Packet provider as a cluster spec sees it: the kinds of its configs
// (PacketDatacenterConfig, PacketMachineConfig), their rules and defaults, the `flotilla generate
// clusterconfig --provider packet` template (the provider registry, infrastructure/providers,
// lists them), and the Cluster API objects a Flotilla Cluster of the provider becomes: a Cluster
// pointing at a PacketCluster and a KubeadmControlPlane, the control plane's
// PacketMachineTemplate, and per worker node group a PacketMachineTemplate, a
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
//
// The rules, each a pure function whose field paths start at spec: ValidateDatacenterConfig:
// identityRef names a PacketClusterIdentity, projectID and metro are set (metro two lowercase
// letters), facility is lowercase letters and digits, vipManager is KUBE_VIP or CPEM.
// ValidateMachineConfig: plan is set, billingCycle is hourly, daily, monthly or yearly, no tag
// starts with the provider's "flotilla:", and each sshAuthorizedKeys entry is an SSH public key.
// ValidateClusterIdentity: apiURL is https, or http to a loopback address (the key is never
// sent in the clear off the machine), credentialsSecretName is a Secret name,
// allowedNamespaces names namespaces with a valid selector.
package clusterspec
