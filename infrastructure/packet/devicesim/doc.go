// Package devicesim plays the operating system of the Metal API simulator's devices (package
// metalsim): when a simulated device becomes active it "boots" by running its userdata, the
// cloud-init that Cluster API's kubeadm bootstrap provider generated for its Machine, as far as
// this machine can run it without a kernel, containers or a kubelet.
//
// # What a boot does
//
// The userdata is read as cloud-init reads it: the "## template: jinja" header makes
// {{ v1.local_hostname }} (the device's hostname) and {{ v1.instance_id }} (its ID) resolve; the
// #cloud-config document's write_files are kept in memory by path (base64 and gzip encodings
// decoded); runcmd is searched for the kubeadm command and its --config file. The other commands
// (package installation, sysctl, binding the elastic IP to lo) are not run: the device already
// "has" what they install, and the elastic IP is a loopback address (see below).
//
// kubeadm init (the first control plane device):
//
//  1. The kubeadm config file (ClusterConfiguration and InitConfiguration) names the control
//     plane endpoint, the Kubernetes version, the service subnet and the node registration.
//  2. The device waits until the endpoint's address is assigned to it in the Metal API: the
//     simulator hands elastic IPs out of 127.40.0.0-127.254.255.255, so "bound to this device" means "served
//     on this machine's loopback address". This is what the cloud-init's command that binds the
//     elastic IP does on a real device.
//  3. It runs etcd and kube-apiserver (package controlplane, with kwok for the Node) on that
//     address and port, with the cluster CA of /etc/kubernetes/pki/ca.crt and ca.key from
//     write_files: the admin kubeconfig Cluster API wrote in <cluster>-kubeconfig, signed by
//     that CA, works against it. The binaries come from the cache for the configured version.
//  4. It leaves behind what kubeadm init leaves and Cluster API reads: the kubeadm-config
//     ConfigMap in kube-system (the ClusterConfiguration, which KubeadmControlPlane takes as
//     "the control plane is initialized"), cluster-info in kube-public, and the device's Node
//     with spec.providerID from --provider-id (equinixmetal://<device-id>), kubeadm's control
//     plane label and taint, and the --node-labels.
//
// kubeadm join (workers, and further control plane devices):
//
//  1. The JoinConfiguration names the API server endpoint, a bootstrap token and the CA
//     certificate hashes to pin.
//  2. Discovery: the endpoint must be served by a control plane this runtime booted, whose CA
//     matches one of caCertHashes (sha256 of the CA's public key, as kubeadm computes it); a
//     TLS connection to the endpoint must verify against that CA; the bootstrap token must exist
//     in the cluster (Secret kube-system/bootstrap-token-<id>, written there by the kubeadm
//     bootstrap provider) with the same secret, usable for authentication and not expired.
//     Until all holds the device retries, as kubeadm join does.
//  3. It registers its Node with providerID, labels and, for a control plane join, kubeadm's
//     label and taint. A real kubelet would get its credentials by TLS bootstrapping with the
//     token; the simulation writes the Node with the credentials of the control plane device
//     that serves the endpoint instead. A control plane join adds no etcd member or API server.
//
// Nodes are annotated kwok.x-k8s.io/node=fake and labelled flotilla.dev/simulated=true: the
// control plane's kwok keeps them Ready with heartbeats, as it does for the local provider.
//
// # Shutdown
//
// Deleting a device cancels its boot (a device that waits or retries stops), stops its control
// plane's processes and removes their directory. Close does the same for every device.
//
// # Not simulated
//
// Container runtimes, static Pods, kubelets and their certificates, kube-proxy and CoreDNS.
// Cluster API's KubeadmControlPlane therefore cannot see etcd members or control plane Pods:
// its EtcdClusterHealthy, ControlPlaneComponentsHealthy and Available conditions stay False or
// Unknown. See docs/packet-provider.md for what Flotilla's ControlPlaneReady means then.
package devicesim
