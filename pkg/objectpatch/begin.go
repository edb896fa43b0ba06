package objectpatch

import (
	"context"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Begin starts a reconcile of obj, an object of a Cluster API cluster that p follows, as Cluster
// API's providers start theirs: it adds finalizer first, so that a delete cannot race what the
// reconcile creates, then, when the object's cluster is known, keeps obj's Paused condition
// (Cluster API's paused.EnsurePausedCondition). When stop is true the reconcile ends there with
// res and err: the finalizer was just written (its update brings the next reconcile), or the
// cluster or obj is paused.
func Begin(ctx context.Context, p *Patch, obj paused.ConditionSetter, finalizer string, cluster *clusterv1.Cluster) (stop bool, res reconcile.Result, err error) {
	if added, err := p.EnsureFinalizer(ctx, finalizer); err != nil || added {
		res, err := RequeueOnConflict(err, ConflictRetry)
		return true, res, err
	}
	if cluster == nil {
		return false, reconcile.Result{}, nil
	}
	isPaused, requeue, err := paused.EnsurePausedCondition(ctx, p.client, cluster, obj)
	return err != nil || isPaused || requeue, reconcile.Result{}, err
}
