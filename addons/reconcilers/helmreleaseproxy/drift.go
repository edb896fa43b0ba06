package helmreleaseproxy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/addons/desired"
	"github.com/flotilla-dev/flotilla/addons/drift"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// DefaultDriftPollInterval is how often the live objects of a release with drift correction
// enabled are compared with its manifest while they cannot be watched and
// spec.driftCorrection.interval is unset. While they are watched, a change is corrected when
// it happens and the full comparison runs at the interval, the resync interval when unset.
const DefaultDriftPollInterval = 30 * time.Second

const driftCorrectedEvent = "DriftCorrected"

// driftEnabled reports whether the release's objects are kept in line with its manifest.
func driftEnabled(hrp *addonsv1.HelmReleaseProxy) bool {
	d := hrp.Spec.DriftCorrection
	return d != nil && d.Mode == addonsv1.DriftCorrectionEnabled
}

// driftInterval is spec.driftCorrection.interval, 0 when unset.
func driftInterval(hrp *addonsv1.HelmReleaseProxy) time.Duration {
	if d := hrp.Spec.DriftCorrection; d != nil && d.Interval != nil && d.Interval.Duration > 0 {
		return d.Interval.Duration
	}
	return 0
}

// requeueAfter is when a Ready release is looked at again unprompted. A watched release
// (watchRelease) is woken by the changes of its objects and of its workloads' availability:
// it comes back at the resync interval, or the drift interval when that is shorter, as a safety
// net. A release that cannot be watched is polled: at the drift interval (30s when unset) when
// drift correction is on, and soon while its workloads are not available (a rollout waits for
// them).
func (r *Reconciler) requeueAfter(s *scope) time.Duration {
	after := r.ResyncInterval
	if driftEnabled(s.hrp) {
		interval := driftInterval(s.hrp)
		if interval == 0 && !s.watched {
			interval = DefaultDriftPollInterval
		}
		if interval > 0 {
			after = min(interval, after)
		}
	}
	if !s.watched && s.healthChecked && len(s.unavailable) > 0 {
		after = min(healthRetry, after)
	}
	return after
}

// correctDrift compares the live objects of the installed release (as observe or the install
// found them) with its manifest and restores those that drifted, recording each restoration.
func (r *Reconciler) correctDrift(ctx context.Context, s *scope, cfg *rest.Config) {
	hrp := s.hrp
	if !driftEnabled(hrp) || !s.objectsKnown {
		return
	}
	rules := hrp.Spec.DriftCorrection.Ignore
	drifted, err := r.Drift.Check(ctx, cfg, s.objects, rules)
	s.driftChecked = true
	if err != nil {
		s.driftErr = err
		return
	}
	hrp.Status.Drifted = drifted
	for _, d := range drifted {
		obj := manifestObject(s, d)
		if obj == nil {
			continue
		}
		if err := r.Drift.Restore(ctx, cfg, obj, rules, hrp.Spec.ReleaseName, desired.ReleaseNamespace(hrp)); err != nil {
			s.driftErr = err
			r.Recorder.Eventf(hrp, nil, corev1.EventTypeWarning, driftCorrectedEvent, "CorrectDrift", "Restoring %s: %v", describe(d), err)
			continue
		}
		hrp.Status.DriftCorrections++
		driftCorrections.WithLabelValues(hrp.Namespace, hrp.Labels[addonsv1.HelmChartProxyNameLabel]).Inc()
		r.Recorder.Eventf(hrp, nil, corev1.EventTypeNormal, driftCorrectedEvent, "CorrectDrift", "Restored %s", describe(d))
	}
}

// manifestObject finds the manifest object a drifted object stands for.
func manifestObject(s *scope, d addonsv1.DriftedObject) *unstructured.Unstructured {
	for _, o := range s.objects {
		if o.GetAPIVersion() == d.APIVersion && o.GetKind() == d.Kind && o.GetNamespace() == d.Namespace && o.GetName() == d.Name {
			return o
		}
	}
	return nil
}

// describe names a drifted object and what happened to it, for events and conditions.
func describe(d addonsv1.DriftedObject) string {
	name := ctrlclient.ObjectKey{Namespace: d.Namespace, Name: d.Name}.String()
	if d.Reason == drift.Deleted {
		return fmt.Sprintf("%s %s (deleted)", d.Kind, name)
	}
	return fmt.Sprintf("%s %s (changed: %v)", d.Kind, name, d.Paths)
}
