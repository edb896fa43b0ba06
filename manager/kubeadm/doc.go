// Package kubeadm is the manager's "kubeadm" component: Cluster API's kubeadm bootstrap
// provider (the KubeadmConfig reconciler) and kubeadm control plane provider (the
// KubeadmControlPlane reconciler), which the Packet provider's clusters use.
//
// The component runs as its own identity (system:serviceaccount:flotilla-system:kubeadm), bound
// to the ClusterRole flotilla-kubeadm. `make generate` writes that role from the RBAC markers of
// the two Cluster API reconciler packages (their own, in the Cluster API module) and of this
// package, which adds what they need on Flotilla's Packet kinds.
package kubeadm
