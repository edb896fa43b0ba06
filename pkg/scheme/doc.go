// Package scheme builds the runtime.Scheme shared by the Flotilla manager, the CLI and the
// integration tests: the client-go built-in types, apiextensions.k8s.io/v1, Cluster API core
// (cluster.x-k8s.io/v1beta2) and its ClusterResourceSets (addons.cluster.x-k8s.io/v1beta2),
// clusterctl's provider inventory (clusterctl.cluster.x-k8s.io/v1alpha3) and Flotilla's API
// groups (cluster, infrastructure and controlplane .flotilla.dev/v1alpha1).
//
// It lives apart from package manager so that code which only needs types (tests, the CLI) does
// not link the Cluster API reconcilers.
package scheme
