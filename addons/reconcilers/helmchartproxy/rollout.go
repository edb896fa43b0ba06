package helmchartproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// Rollout defaults.
const (
	// DefaultHealthTimeout is how long a changed cluster may take to become healthy.
	DefaultHealthTimeout = 5 * time.Minute
	// rolloutPoll is how soon a rollout waiting for health looks again (HelmReleaseProxy status
	// changes also wake it).
	rolloutPoll = 5 * time.Second
)

const rolloutEvent = "Rollout"

// rollout applies desired (the HelmReleaseProxies of this generation, by cluster) batch by
// batch: clusters the proxy newly selects at once; clusters whose release must change
// spec.rollout.batchSize at a time, each batch once the previous one is healthy and
// pauseBetweenBatches has passed. More than maxFailures failed clusters stop it, and with
// rollbackOnFailure the clusters it changed are rolled back. Its state is status.rollout, so a
// restarted manager carries on where it was.
func (r *Reconciler) rollout(ctx context.Context, s *scope, desired map[string]*addonsv1.HelmReleaseProxy) error {
	hcp := s.proxy
	spec := hcp.Spec.Rollout
	now := r.now()
	ro := hcp.Status.Rollout
	if ro == nil || ro.Generation != hcp.Generation {
		ro = &addonsv1.RolloutStatus{Generation: hcp.Generation, Phase: addonsv1.RolloutProgressing}
		hcp.Status.Rollout = ro
	}

	pending, err := r.applySettled(ctx, s, desired)
	if err != nil {
		return err
	}
	if ro.Phase == addonsv1.RolloutFailed || ro.Phase == addonsv1.RolloutRolledBack {
		return r.stopRollout(ctx, s, desired) // stopped for this generation; only a change restarts
	}
	waiting := r.checkUpdated(s, now)

	switch {
	case len(ro.Failed) > int(spec.MaxFailures):
		return r.stopRollout(ctx, s, desired)
	case len(waiting) > 0:
		ro.Phase = addonsv1.RolloutProgressing
		ro.Message = "waiting for " + strings.Join(waiting, ", ") + " to be healthy"
		s.requeueAfter = min(s.requeueAfter, rolloutPoll)
		return nil
	case len(pending) == 0:
		if ro.Phase != addonsv1.RolloutComplete {
			r.Recorder.Eventf(hcp, nil, corev1.EventTypeNormal, rolloutEvent, "Rollout", "Generation %d reached every cluster", hcp.Generation)
		}
		ro.Phase, ro.Message = addonsv1.RolloutComplete, ""
		return nil
	}

	if pause := pauseBetweenBatches(spec); pause > 0 && len(ro.Updated) > 0 {
		if ro.BatchHealthyAt == nil {
			ro.BatchHealthyAt = &metav1.Time{Time: now}
		}
		if remaining := ro.BatchHealthyAt.Add(pause).Sub(now); remaining > 0 {
			ro.Phase = addonsv1.RolloutPaused
			ro.Message = fmt.Sprintf("the last batch is healthy; the next starts in %s", remaining.Round(time.Second))
			s.requeueAfter = min(s.requeueAfter, remaining)
			return nil
		}
	}

	// The batch is recorded before it is applied, with an optimistic lock: a reconcile working
	// from an outdated proxy cannot start a batch twice, and a manager killed in between finds
	// the batch in status and applies it.
	batch := pending[:min(len(pending), batchSize(spec))]
	ro.Updated = append(ro.Updated, batch...)
	ro.BatchStartedAt, ro.BatchHealthyAt = &metav1.Time{Time: now}, nil
	ro.Phase = addonsv1.RolloutProgressing
	ro.Message = "changing " + strings.Join(batch, ", ")
	if err := r.persistStatus(ctx, s); err != nil {
		return err
	}
	for _, name := range batch {
		if err := r.applyReleaseProxy(ctx, s, name, desired[name]); err != nil {
			return err
		}
	}
	r.Recorder.Eventf(hcp, nil, corev1.EventTypeNormal, rolloutEvent, "Rollout", "Generation %d: changing %s (%d of %d clusters)",
		hcp.Generation, strings.Join(batch, ", "), len(ro.Updated), len(ro.Updated)+len(pending)-len(batch))
	s.requeueAfter = min(s.requeueAfter, rolloutPoll)
	return nil
}

// applySettled applies the HelmReleaseProxies whose place in the rollout is settled (clusters
// newly selected, clusters this rollout already changed, clusters already on this spec; with the
// rollback annotation once a failed rollout rolls back) and returns the clusters still to change.
func (r *Reconciler) applySettled(ctx context.Context, s *scope, desired map[string]*addonsv1.HelmReleaseProxy) ([]string, error) {
	ro := s.proxy.Status.Rollout
	rollingBack := ro.Phase == addonsv1.RolloutRolledBack || (ro.Phase == addonsv1.RolloutFailed && s.proxy.Spec.Rollout.RollbackOnFailure)
	var pending []string
	for _, name := range sortedKeys(desired) {
		want, have := desired[name], s.releaseProxies[name]
		updated := slices.Contains(ro.Updated, name)
		if have != nil && !updated && !sameRelease(have, want) {
			pending = append(pending, name)
			continue
		}
		if rollingBack && have != nil && updated {
			want.Annotations = map[string]string{addonsv1.RollbackAnnotation: strconv.FormatInt(have.Generation, 10)}
		}
		if err := r.applyReleaseProxy(ctx, s, name, want); err != nil {
			return nil, err
		}
	}
	return pending, nil
}

// checkUpdated records the clusters this rollout changed that failed, and returns those still to
// be waited for.
func (r *Reconciler) checkUpdated(s *scope, now time.Time) []string {
	ro := s.proxy.Status.Rollout
	var waiting []string
	for _, name := range ro.Updated {
		hrp := s.releaseProxies[name]
		if hrp == nil || slices.Contains(ro.Failed, name) {
			continue
		}
		switch state, why := releaseState(hrp, ro.BatchStartedAt, healthTimeout(s.proxy.Spec.Rollout), now); state {
		case stateFailed:
			ro.Failed = append(ro.Failed, name)
			r.Recorder.Eventf(s.proxy, hrp, corev1.EventTypeWarning, rolloutEvent, "Rollout", "Cluster %s failed: %s", name, why)
		case stateWaiting:
			waiting = append(waiting, name)
		}
	}
	return waiting
}

// stopRollout stops a rollout past its failure threshold and, with rollbackOnFailure, asks the
// clusters it changed to roll back (the annotation was applied above for every updated cluster
// once the phase is Failed); it is RolledBack once they all did.
func (r *Reconciler) stopRollout(ctx context.Context, s *scope, desired map[string]*addonsv1.HelmReleaseProxy) error {
	hcp := s.proxy
	ro := hcp.Status.Rollout
	spec := hcp.Spec.Rollout
	if ro.Phase != addonsv1.RolloutFailed && ro.Phase != addonsv1.RolloutRolledBack {
		ro.Phase = addonsv1.RolloutFailed
		if err := r.persistStatus(ctx, s); err != nil {
			return err
		}
		r.Recorder.Eventf(hcp, nil, corev1.EventTypeWarning, rolloutEvent, "Rollout", "Generation %d stopped: %d clusters failed (%s), at most %d may",
			hcp.Generation, len(ro.Failed), strings.Join(ro.Failed, ", "), spec.MaxFailures)
		if spec.RollbackOnFailure {
			// Apply the rollback annotation now, rather than on the next reconcile.
			for _, name := range ro.Updated {
				have, want := s.releaseProxies[name], desired[name]
				if have == nil || want == nil {
					continue
				}
				want.Annotations = map[string]string{addonsv1.RollbackAnnotation: strconv.FormatInt(have.Generation, 10)}
				if err := r.applyReleaseProxy(ctx, s, name, want); err != nil {
					return err
				}
			}
		}
	}
	ro.Message = fmt.Sprintf("stopped: %d clusters failed (%s); fix the HelmChartProxy to start a new rollout", len(ro.Failed), strings.Join(ro.Failed, ", "))
	if !spec.RollbackOnFailure {
		return nil
	}
	var left []string
	for _, name := range ro.Updated {
		if hrp := s.releaseProxies[name]; hrp != nil && hrp.Status.RolledBackGeneration != hrp.Generation {
			left = append(left, name)
		}
	}
	if len(left) > 0 {
		ro.Message += "; rolling back " + strings.Join(left, ", ")
		s.requeueAfter = min(s.requeueAfter, rolloutPoll)
		return nil
	}
	if ro.Phase != addonsv1.RolloutRolledBack {
		r.Recorder.Eventf(hcp, nil, corev1.EventTypeNormal, rolloutEvent, "Rollout", "Generation %d: rolled back %s", hcp.Generation, strings.Join(ro.Updated, ", "))
	}
	ro.Phase = addonsv1.RolloutRolledBack
	ro.Message += "; rolled back " + strings.Join(ro.Updated, ", ")
	return nil
}

type releaseHealth int

const (
	stateWaiting releaseHealth = iota
	stateHealthy
	stateFailed
)

// releaseState says whether a changed cluster's release is healthy, failed (Helm failed, or
// not healthy within timeout of its batch's start) or still to be waited for.
func releaseState(hrp *addonsv1.HelmReleaseProxy, batchStarted *metav1.Time, timeout time.Duration, now time.Time) (releaseHealth, string) {
	current := func(t string) *metav1.Condition {
		c := meta.FindStatusCondition(hrp.Status.Conditions, t)
		if c == nil || c.ObservedGeneration != hrp.Generation {
			return nil
		}
		return c
	}
	if c := current(addonsv1.HealthyCondition); c != nil && c.Status == metav1.ConditionTrue {
		return stateHealthy, ""
	}
	if c := current(addonsv1.ReadyCondition); c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == addonsv1.InstallFailedReason || c.Reason == addonsv1.ReleaseNotDeployedReason) {
		return stateFailed, c.Message
	}
	if batchStarted != nil && now.Sub(batchStarted.Time) > timeout {
		why := "not healthy"
		if c := current(addonsv1.HealthyCondition); c != nil {
			why = c.Message
		}
		return stateFailed, fmt.Sprintf("not healthy within %s: %s", timeout, why)
	}
	return stateWaiting, ""
}

// sameRelease: the HelmReleaseProxy already has the spec this generation wants.
func sameRelease(have, want *addonsv1.HelmReleaseProxy) bool {
	a, b := have.Spec.DeepCopy(), want.Spec.DeepCopy()
	normalize := func(s *addonsv1.HelmReleaseProxySpec) {
		if s.ReconcileStrategy == "" {
			s.ReconcileStrategy = addonsv1.ReconcileContinuous
		}
		if s.DriftCorrection != nil && s.DriftCorrection.Mode == "" {
			s.DriftCorrection.Mode = addonsv1.DriftCorrectionDisabled
		}
	}
	normalize(a)
	normalize(b)
	return equalJSON(a, b)
}

func batchSize(spec *addonsv1.Rollout) int {
	if spec.BatchSize < 1 {
		return 1
	}
	return int(spec.BatchSize)
}

func pauseBetweenBatches(spec *addonsv1.Rollout) time.Duration {
	if spec.PauseBetweenBatches == nil {
		return 0
	}
	return spec.PauseBetweenBatches.Duration
}

func healthTimeout(spec *addonsv1.Rollout) time.Duration {
	if spec.HealthTimeout == nil || spec.HealthTimeout.Duration <= 0 {
		return DefaultHealthTimeout
	}
	return spec.HealthTimeout.Duration
}

// equalJSON compares two values by their JSON encoding, as the API server stores them.
func equalJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
