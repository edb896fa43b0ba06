// Package kubeconfigaccess lets the users bound to the ClusterRole flotilla-cluster-creator in a
// namespace read the kubeconfig Secrets of the workload clusters in that namespace, and no other
// Secret.
//
// Kubernetes RBAC grants access to Secrets by resource and, optionally, by exact name
// (resourceNames); it has no name patterns, so no static role can say "every Secret named
// <cluster>-kubeconfig". This reconciler writes the names down instead. For every namespace it
// keeps two objects, both named flotilla-kubeconfigs (RoleName):
//
//   - a Role allowing get on the Secrets <cluster>-kubeconfig, one resourceName per workload
//     Cluster (spec.management: false) in the namespace. A management cluster's kubeconfig is
//     never listed: it is an admin credential of the management cluster itself;
//   - a RoleBinding of that Role to every subject (user, group, service account) that a
//     RoleBinding in the namespace binds to the ClusterRole flotilla-cluster-creator.
//
// When the namespace has no such subject or no workload Cluster, both are deleted (a Role rule
// with no resourceNames would allow every Secret, so an empty list is never written). The API
// server enforces the result: the bound users can get exactly those Secrets, cannot list or watch
// Secrets, and cannot read the CA, etcd or service account Secrets of the same clusters. The name
// of a new cluster's kubeconfig Secret is granted as soon as its Cluster exists, before the Secret
// is written, so `flotilla create cluster --kubeconfig` run by such a user can read it once the
// cluster is Ready. Removing a user's RoleBinding, or a Cluster, revokes the access within a
// reconcile. Subjects bound through a ClusterRoleBinding get no kubeconfig access: the
// ClusterRole is meant to be bound per namespace.
//
// The Reconciler's requests are namespaces (the request's Name is the namespace's name); it
// watches Flotilla Clusters, RoleBindings that reference flotilla-cluster-creator, and its own
// Role and RoleBinding, which it restores when edited. It writes only when something changed.
package kubeconfigaccess
