// Package clusterlifecycle gives every Flotilla Cluster (cluster.flotilla.dev/v1alpha1, management
// clusters included) what curated packages need, and takes it away again:
//
//   - while the Cluster exists: the namespace flotilla-packages-<cluster>, which holds its
//     Packages, and the PackageBundleController flotilla-packages/<cluster>, both created once
//     and then left to their users;
//   - when the Cluster is deleted: its Packages are deleted (their finalizers uninstall them),
//     then the namespace and the PackageBundleController, and then the pre-delete hook
//     pre-delete.hook.cluster.flotilla.dev/packages (package predelete: the Cluster's control
//     plane is not deleted before) and the finalizer packages.flotilla.dev/cleanup on the
//     Cluster are released.
//
// A Cluster that clusterctl move deletes after copying it to another management cluster (the
// clusterctl.cluster.x-k8s.io/delete-for-move annotation) is let go at once: its packages keep
// running and the other management cluster takes them over.
package clusterlifecycle
