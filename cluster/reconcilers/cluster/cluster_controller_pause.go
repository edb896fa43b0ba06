package cluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// Pausing, and standing aside for clusterctl move.
//
// A Flotilla Cluster is paused with CAPI's annotation, cluster.x-k8s.io/paused. The reconciler
// then writes nothing but status and one thing: it sets spec.paused on the CAPI Cluster, so CAPI's
// controllers and the local provider stop too. When the annotation goes, the next apply of the
// CAPI Cluster leaves spec.paused out and server-side apply removes it, because Flotilla owned it.
//
// clusterctl move copies the Flotilla Cluster (its CRD has the move-hierarchy label) with the
// CAPI objects to another management cluster and then deletes them from the source. It pauses
// the CAPI Clusters first and refuses to start if one is paused already, so a Flotilla pause
// cannot be what protects a move. Left alone, the reconciler on the source would recreate the CAPI
// Cluster the mover just deleted (the Flotilla Cluster is deleted last), and the one on the
// target would create CAPI objects before the mover copies them. So:
//
//   - While the reconciler is active, the Flotilla Cluster carries clusterctl's block-move
//     annotation: the mover waits for it to go after pausing the CAPI Clusters, which is how
//     clusterctl expects a resource that cannot pause instantly to signal that it has.
//   - When the reconciler finds the CAPI Cluster paused by someone else, it swaps block-move for
//     cluster.flotilla.dev/capi-paused in one patch and holds: it writes nothing but status, and
//     does not recreate a missing CAPI Cluster. The mover copies the Flotilla Cluster after that,
//     so the copy holds too.
//   - The hold ends once the CAPI Cluster exists and is unpaused (the mover unpauses the target's
//     at the very end): the reconciler removes cluster.flotilla.dev/capi-paused, puts block-move
//     back and carries on.
//   - The CLI does not let the mover find block-move at all: before it moves a namespace it sets
//     cluster.flotilla.dev/moving on its Flotilla Clusters, waits until the reconciler has swapped
//     block-move for capi-paused on each, moves, and removes cluster.flotilla.dev/moving from the
//     copies. The mover checks block-move right after pausing and, finding it, looks again only
//     5 s later.
//   - A Flotilla Cluster with clusterctl's delete-for-move annotation stands still, and once
//     deleted lets go at once, deleting nothing (reconcileDelete). The mover adds that annotation
//     with a JSON patch that replaces all annotations, capi-paused included, and deletes the
//     object in a second request: in between, the annotation is the only sign of the move, and
//     the CAPI Cluster is gone already.

// pauseState says whether and why a reconcile stands still.
type pauseState int

const (
	notPaused pauseState = iota
	// pausedByAnnotation: the Flotilla Cluster has cluster.x-k8s.io/paused.
	pausedByAnnotation
	// pausedByCAPI: the CAPI Cluster is paused by someone else, or missing while holding, or
	// clusterctl move is deleting the Flotilla Cluster (delete-for-move).
	pausedByCAPI
	// pausedForMove: the CLI is about to move the Cluster (cluster.flotilla.dev/moving).
	pausedForMove
)

// pauseStateOf decides, before anything is applied, whether the reconcile stands still: the
// Flotilla Cluster is paused, or it holds (capi-paused) and its CAPI Cluster (nil when missing)
// is still paused or missing. A CAPI Cluster paused by someone else while the reconciler is not
// holding yet is found by reconcileCAPICluster, after an apply that would unpause a CAPI Cluster
// Flotilla itself had paused.
func pauseStateOf(c *flotillav1.Cluster, capi *clusterv1.Cluster) pauseState {
	switch {
	case metav1.HasAnnotation(c.ObjectMeta, clusterctlv1.DeleteForMoveAnnotation):
		return pausedByCAPI
	case metav1.HasAnnotation(c.ObjectMeta, clusterv1.PausedAnnotation):
		return pausedByAnnotation
	case metav1.HasAnnotation(c.ObjectMeta, flotillav1.MovingAnnotation):
		return pausedForMove
	case metav1.HasAnnotation(c.ObjectMeta, flotillav1.CAPIPausedAnnotation) && (capi == nil || capiPaused(capi)):
		return pausedByCAPI
	default:
		return notPaused
	}
}

// paused records the pause state in the scope and reports whether the reconcile stands still.
func (r *Reconciler) paused(s *scope) bool {
	s.pause = pauseStateOf(s.cluster, s.capiCluster)
	return s.pause != notPaused
}

// reconcilePaused propagates a Flotilla pause to the CAPI Cluster's spec.paused, and a coming
// move to the move annotations. It never creates a CAPI Cluster, and leaves one that is paused
// already alone.
func (r *Reconciler) reconcilePaused(ctx context.Context, s *scope) error {
	if s.pause == pausedForMove {
		return setMoveAnnotations(ctx, s, true)
	}
	capi := s.capiCluster
	if s.pause != pausedByAnnotation || capi == nil || ptr.Deref(capi.Spec.Paused, false) {
		return nil
	}
	paused := desiredCAPICluster(s, true)
	if err := r.apply(ctx, s.cluster, paused); err != nil {
		return err
	}
	s.capiCluster = paused
	ctrl.LoggerFrom(ctx).Info("Paused the CAPI Cluster", "capiCluster", klog.KObj(paused))
	r.Recorder.Eventf(s.cluster, paused, corev1.EventTypeNormal, eventPaused, "Pause", "Paused CAPI Cluster %s", paused.Name)
	return nil
}

// setMoveAnnotations puts the Cluster's move annotations in the state for hold: holding means
// cluster.flotilla.dev/capi-paused and no block-move; active means block-move and no
// capi-paused.
func setMoveAnnotations(ctx context.Context, s *scope, hold bool) error {
	c := s.cluster
	_, blocking := c.Annotations[clusterctlv1.BlockMoveAnnotation]
	holding := metav1.HasAnnotation(c.ObjectMeta, flotillav1.CAPIPausedAnnotation)
	if holding == hold && blocking == !hold {
		return nil
	}
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	if hold {
		c.Annotations[flotillav1.CAPIPausedAnnotation] = "true"
		delete(c.Annotations, clusterctlv1.BlockMoveAnnotation)
	} else {
		c.Annotations[clusterctlv1.BlockMoveAnnotation] = FieldOwner
		delete(c.Annotations, flotillav1.CAPIPausedAnnotation)
	}
	if err := s.patch.Write(ctx); err != nil {
		return fmt.Errorf("setting move annotations: %w", err)
	}
	return nil
}

// capiPaused reports whether a CAPI Cluster is paused, the way CAPI's controllers see it.
func capiPaused(capi *clusterv1.Cluster) bool {
	return ptr.Deref(capi.Spec.Paused, false) || metav1.HasAnnotation(capi.ObjectMeta, clusterv1.PausedAnnotation)
}
