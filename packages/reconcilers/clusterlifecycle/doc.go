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
// # Whose objects these are
//
// Both objects are named after the Cluster's name alone, so they carry who they belong to: the
// labels packages.flotilla.dev/cluster-namespace, cluster-name and cluster-uid. The Cluster
// webhook refuses a Cluster whose name another namespace already uses, but two Clusters created
// at the same moment both pass it; the labels decide then:
//
//   - an object carrying the Cluster's namespace, name and UID is its own;
//   - one carrying its namespace and name with another UID (or none) is its own from before: a
//     Cluster created by an older Flotilla, or moved away with clusterctl (which releases these
//     objects without deleting them) and back, with a new UID. The reconciler writes the UID on
//     it;
//   - one carrying another namespace, or no cluster labels at all, is another's. The reconciler
//     neither changes nor deletes it, nor the Packages in it, and says so in the Cluster's
//     PackagesReady condition (False, NameConflict, naming the owner) and a Warning event.
//
// Deleting a Cluster deletes the namespace (after the Packages in it) and the
// PackageBundleController only when they carry its UID, with the object's UID as a precondition
// of the delete.
//
// The Cluster's status is the cluster component's but for PackagesReady: the reconciler writes
// that condition alone, by server-side apply as "flotilla-packages-lifecycle" (see package
// objectpatch), and the API server keeps the Cluster reconciler's conditions whatever copy of the
// Cluster either read.
//
// A Cluster that clusterctl move deletes after copying it to another management cluster (the
// clusterctl.cluster.x-k8s.io/delete-for-move annotation) is let go at once: its packages keep
// running and the other management cluster takes them over.
package clusterlifecycle
