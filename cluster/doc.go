// Package cluster is Flotilla's cluster lifecycle component: the Flotilla Cluster
// (cluster.flotilla.dev/v1alpha1) reconciler, which turns a Cluster into Cluster API objects, and
// the Cluster admission webhooks.
//
// Setup registers both with a controller-runtime manager; the manager package runs it as the
// "cluster" component:
//
//	if err := cluster.Setup(ctx, mgr); err != nil {
//		return err
//	}
//
// Options.Setup does the same with options: the identities the webhooks trust as admins
// (webhooks.Admins, from the manager's --admin-groups and --admin-users).
//
// The reconciler lives in reconcilers/cluster, the webhooks in webhooks.
package cluster
