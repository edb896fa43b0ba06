package helmreleaseproxy

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/addons/desired"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// healthRetry is how soon the workloads of a release that is not healthy are looked at again
// while they cannot be watched.
const healthRetry = 5 * time.Second

const rolledBackEvent = "RolledBack"

// rollbackRequested: the HelmChartProxy's failed rollout asked for the release of the current
// generation to be rolled back.
func rollbackRequested(hrp *addonsv1.HelmReleaseProxy) bool {
	v, ok := hrp.Annotations[addonsv1.RollbackAnnotation]
	return ok && v == strconv.FormatInt(hrp.Generation, 10)
}

// heldAfterRollback: the release was rolled back for the current generation and stays there.
func heldAfterRollback(hrp *addonsv1.HelmReleaseProxy) bool {
	return hrp.Status.RolledBackGeneration != 0 && hrp.Status.RolledBackGeneration == hrp.Generation
}

// rollback rolls the release back to the revision it ran before the current generation (once),
// and holds it there: no upgrade until the spec changes.
func (r *Reconciler) rollback(ctx context.Context, s *scope, cfg *rest.Config) (ctrl.Result, error) {
	hrp := s.hrp
	name, ns := hrp.Spec.ReleaseName, desired.ReleaseNamespace(hrp)
	target := hrp.Status.Revision // the upgrade to this generation failed: the deployed one
	if hrp.Status.AppliedGeneration == hrp.Generation {
		target = hrp.Status.PreviousRevision // it succeeded: the one before
	}
	if !heldAfterRollback(hrp) {
		if target == 0 {
			s.fail(addonsv1.RolledBackReason, "the rollout failed; release %s/%s has no earlier revision to roll back to", ns, name)
			hrp.Status.RolledBackGeneration = hrp.Generation
			return ctrl.Result{}, nil
		}
		err := r.Engine.Rollback(ctx, cfg, name, ns, int(target))
		countAction("rollback", err)
		if err != nil {
			s.fail(addonsv1.InstallFailedReason, "rolling back to revision %d: %v", target, err)
			r.Recorder.Eventf(hrp, nil, corev1.EventTypeWarning, rolledBackEvent, "Rollback", "Rolling release %s/%s back to revision %d: %v", ns, name, target, err)
			return ctrl.Result{}, fmt.Errorf("rolling release %s/%s of cluster %s back: %w", ns, name, hrp.Spec.ClusterName, err)
		}
		r.Recorder.Eventf(hrp, nil, corev1.EventTypeNormal, rolledBackEvent, "Rollback",
			"Rolled release %s/%s back to revision %d: the rollout of its HelmChartProxy failed", ns, name, target)
		hrp.Status.RolledBackGeneration = hrp.Generation
		hrp.Status.AppliedHash = "" // whatever the spec says next is applied
		if got, err := r.Engine.Get(ctx, cfg, name, ns); err == nil {
			hrp.Status.Revision = int32(got.Revision) //nolint:gosec // Helm revisions are small
			hrp.Status.ReleaseStatus = got.Status
			hrp.Status.ChartVersion = got.ChartVersion
		}
	}
	s.fail(addonsv1.RolledBackReason, "the rollout of this spec failed; release %s/%s was rolled back to revision %d and stays there until the HelmChartProxy changes", ns, name, target)
	return ctrl.Result{RequeueAfter: r.ResyncInterval}, nil
}

// checkHealth looks at the workloads of the installed release (as observe or the install found
// them).
func (r *Reconciler) checkHealth(ctx context.Context, s *scope, cfg *rest.Config) {
	if !s.objectsKnown {
		return
	}
	s.healthChecked = true
	s.unavailable, s.healthErr = r.Drift.Unavailable(ctx, cfg, s.objects)
}
