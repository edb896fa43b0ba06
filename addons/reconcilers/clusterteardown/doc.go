// Package clusterteardown holds a deleted Flotilla Cluster's control plane until its addon
// releases are uninstalled.
//
// The Reconciler sets the pre-delete hook pre-delete.hook.cluster.flotilla.dev/addons (package
// predelete) on every Flotilla Cluster. When a Cluster is deleted, Flotilla's Cluster reconciler
// keeps its CAPI Cluster and marks it with the teardown annotation; HelmChartProxies stop
// selecting a CAPI Cluster so marked and delete its HelmReleaseProxies, whose finalizers
// uninstall the releases as spec.uninstallOnClusterDelete says. Once no HelmReleaseProxy of the
// cluster is left, the Reconciler removes the hook, and the teardown goes on.
package clusterteardown
