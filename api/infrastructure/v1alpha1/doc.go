// Package v1alpha1 contains the infrastructure.flotilla.dev/v1alpha1 API: the local provider's
// datacenter and machine configs, and its Cluster API infrastructure objects (LocalCluster,
// LocalMachine, LocalMachineTemplate). It holds types, constants and generated code only.
//
// +kubebuilder:object:generate=true
// +groupName=infrastructure.flotilla.dev
package v1alpha1
