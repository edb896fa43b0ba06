// Package v1alpha1 contains the controlplane.flotilla.dev/v1alpha1 API: LocalControlPlane, the
// hosted control plane of the local provider, a Cluster API control plane provider. It holds
// types, constants and generated code only.
//
// +kubebuilder:object:generate=true
// +groupName=controlplane.flotilla.dev
package v1alpha1
