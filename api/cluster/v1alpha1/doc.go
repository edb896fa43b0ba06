// Package v1alpha1 contains the cluster.flotilla.dev/v1alpha1 API: the Flotilla Cluster, which
// describes a management or workload cluster, and GitOpsConfig, which names the Git repository
// its specs are kept in. It holds types, constants and generated code only.
//
// +kubebuilder:object:generate=true
// +groupName=cluster.flotilla.dev
package v1alpha1
