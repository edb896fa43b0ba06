// Package predelete is the protocol by which components that install into a workload cluster
// hold its teardown back until they have uninstalled, while its API server still answers.
//
// A component that installs into a cluster (packages, addons) sets its hook, the annotation
// pre-delete.hook.cluster.flotilla.dev/<component>, on the Flotilla Cluster with Ensure while
// the Cluster is not being deleted. When the Cluster is deleted, the Flotilla Cluster
// reconciler does not delete the CAPI Cluster (its workers and control plane) while any hook
// is set (Hooks); it marks the CAPI Cluster with the teardown annotation instead, so that those
// who select CAPI Clusters let it go. Each component uninstalls, and then removes its hook with
// Release; the last removal lets the teardown go on.
//
// What becomes of each release is one rule, Decide, for every component: the release's
// uninstallOnClusterDelete policy (Ensure, BestEffort, Skip) applies while its cluster is torn
// down, which began when the Flotilla Cluster was deleted (TeardownBegan), and Ensure gives up
// the uninstall timeout (5 minutes by default) after that moment.
//
// Cluster API's Machine deletion hooks (pre-drain.delete.hook.machine.cluster.x-k8s.io/...) are
// the model: annotations, one per component, and whoever sets one removes it. A hook whose
// component no longer runs holds the teardown until an admin removes the annotation; the
// Cluster's Ready condition names the hooks it waits for.
package predelete
