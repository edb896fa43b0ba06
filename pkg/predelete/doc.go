// Package predelete is the protocol by which components that install into a workload cluster
// hold its teardown back until they have uninstalled, while its API server still answers.
//
// A component that installs into a cluster (packages, addons) sets its hook, the annotation
// pre-delete.hook.cluster.flotilla.dev/<component>, on the Flotilla Cluster with Ensure while
// the Cluster is not being deleted. When the Cluster is deleted, the Flotilla Cluster
// reconciler does not delete the CAPI Cluster (its workers and control plane) while any hook
// is set (Hooks); it marks the CAPI Cluster with the teardown annotation instead, so that those
// who select CAPI Clusters let it go. Each component uninstalls, bounded by its own timeout and
// policy (uninstallOnClusterDelete), and then removes its hook with Release; the last removal
// lets the teardown go on.
//
// Cluster API's Machine deletion hooks (pre-drain.delete.hook.machine.cluster.x-k8s.io/...) are
// the model: annotations, one per component, and whoever sets one removes it. A hook whose
// component no longer runs holds the teardown until an admin removes the annotation; the
// Cluster's Ready condition names the hooks it waits for.
package predelete
