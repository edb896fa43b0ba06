package manager

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// clusterSources is the ClusterCache the components get. Cluster API's ClusterCache sends its
// events (a cluster connected, a health probe failed) to each controller's cluster source over an
// unbuffered channel, from a reconcile that waits until the event is taken. The managers of the
// components stop alongside the ClusterCache's controller (all are runnables of this process's
// manager that need no leader election), and a source that no longer read would hold that
// reconcile, and with it the manager's shutdown, until the grace period ends. So the cluster
// sources read until the manager has stopped (Run returned): an event that comes after its
// controller stopped goes to the controller's queue, shut down by then, which drops it.
type clusterSources struct {
	clustercache.ClusterCache
	// stopped ends when the manager has stopped.
	stopped context.Context
}

// GetClusterSource returns the ClusterCache's source for controllerName, read until the manager
// has stopped.
func (c clusterSources) GetClusterSource(controllerName string, mapFunc func(ctx context.Context, cluster ctrlclient.Object) []ctrl.Request,
	opts ...clustercache.GetClusterSourceOption) source.Source {
	return lastingSource{Source: c.ClusterCache.GetClusterSource(controllerName, mapFunc, opts...), stopped: c.stopped}
}

// lastingSource starts a source with the values of its controller's context (its logger), but
// ends it only when stopped does.
type lastingSource struct {
	source.Source
	stopped context.Context
}

func (s lastingSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	context.AfterFunc(s.stopped, cancel)
	return s.Source.Start(ctx, queue)
}
