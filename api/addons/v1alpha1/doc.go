// Package v1alpha1 contains the addons.flotilla.dev/v1alpha1 API: HelmChartProxy, which selects
// Cluster API Clusters by label and says which Helm chart, with which values, each of them runs,
// and HelmReleaseProxy, one per (HelmChartProxy, Cluster), which installs that chart into that
// one cluster and reports the Helm release's state. It holds types, constants and generated code
// only.
//
// +kubebuilder:object:generate=true
// +groupName=addons.flotilla.dev
package v1alpha1
