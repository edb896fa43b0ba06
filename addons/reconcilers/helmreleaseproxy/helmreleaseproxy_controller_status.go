package helmreleaseproxy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// setStatus turns what the reconcile found (the scope) into conditions. It runs once, deferred,
// at the end of every reconcile, so every path leaves conditions that say why.
func setStatus(s *scope) {
	hrp := s.hrp
	if !s.paused && !s.deleting {
		hrp.Status.ObservedGeneration = hrp.Generation
	}
	setPaused(hrp, s.paused)
	if !s.paused && !s.busy {
		setReady(hrp, s)
	}
	setDrifted(hrp, s)
	setHealthy(hrp, s)
	if s.orphaned != nil {
		meta.SetStatusCondition(&hrp.Status.Conditions, metav1.Condition{
			Type: addonsv1.OrphanedCondition, Status: metav1.ConditionTrue, Reason: addonsv1.UnreachableAtDeleteReason,
			ObservedGeneration: hrp.Generation,
			Message:            fmt.Sprintf("release left in cluster %s: %v", hrp.Spec.ClusterName, s.orphaned),
		})
	}
}

// setPaused: True while the HelmReleaseProxy or its Cluster is paused.
func setPaused(hrp *addonsv1.HelmReleaseProxy, paused bool) {
	cond := metav1.Condition{Type: addonsv1.PausedCondition, Status: metav1.ConditionFalse, Reason: addonsv1.NotPausedReason, ObservedGeneration: hrp.Generation}
	if paused {
		cond.Status, cond.Reason = metav1.ConditionTrue, addonsv1.PausedReason
		cond.Message = fmt.Sprintf("the HelmReleaseProxy or Cluster %s is paused", hrp.Spec.ClusterName)
	}
	meta.SetStatusCondition(&hrp.Status.Conditions, cond)
}

// setReady: True when the release is deployed as the spec says.
func setReady(hrp *addonsv1.HelmReleaseProxy, s *scope) {
	cond := metav1.Condition{Type: addonsv1.ReadyCondition, Status: metav1.ConditionFalse, ObservedGeneration: hrp.Generation}
	inst := hrp.Status.Installed
	switch {
	case s.notReady != nil:
		cond.Reason, cond.Message = s.notReady.reason, s.notReady.message
	case s.deleting:
		cond.Reason, cond.Message = addonsv1.DeletingReason, "uninstalling the release"
	case inst == nil:
		cond.Reason, cond.Message = addonsv1.InstallingReason, "the release is not installed yet"
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, addonsv1.ReadyReason
		cond.Message = fmt.Sprintf("release %s/%s revision %d is %s (chart %s %s)",
			inst.Namespace, inst.ReleaseName, hrp.Status.Revision, hrp.Status.ReleaseStatus, inst.ChartName, hrp.Status.ChartVersion)
	}
	meta.SetStatusCondition(&hrp.Status.Conditions, cond)
}

// setDrifted: True when the last comparison found objects that differed from the manifest (the
// message says which, and whether restoring them failed); False when none did. The condition is
// removed when drift correction is off.
func setDrifted(hrp *addonsv1.HelmReleaseProxy, s *scope) {
	if !driftEnabled(hrp) {
		meta.RemoveStatusCondition(&hrp.Status.Conditions, addonsv1.DriftedCondition)
		hrp.Status.Drifted = nil
		return
	}
	if !s.driftChecked {
		return
	}
	cond := metav1.Condition{Type: addonsv1.DriftedCondition, Status: metav1.ConditionFalse, Reason: addonsv1.NoDriftReason,
		ObservedGeneration: hrp.Generation, Message: "the release's objects match its manifest"}
	switch {
	case len(hrp.Status.Drifted) > 0:
		names := make([]string, 0, len(hrp.Status.Drifted))
		for _, d := range hrp.Status.Drifted {
			names = append(names, describe(d))
		}
		cond.Status, cond.Reason = metav1.ConditionTrue, addonsv1.DriftDetectedReason
		cond.Message = "restored " + strings.Join(names, ", ")
		if s.driftErr != nil {
			cond.Message = fmt.Sprintf("drifted: %s; restoring failed: %v", strings.Join(names, ", "), s.driftErr)
		}
	case s.driftErr != nil:
		cond.Status, cond.Reason = metav1.ConditionUnknown, addonsv1.DriftCheckFailedReason
		cond.Message = fmt.Sprintf("comparing the live objects failed: %v", s.driftErr)
	}
	meta.SetStatusCondition(&hrp.Status.Conditions, cond)
}

// setHealthy: True when the release is Ready and its workloads are available; set whenever the
// workloads were looked at, and False whenever the release is not Ready.
func setHealthy(hrp *addonsv1.HelmReleaseProxy, s *scope) {
	cond := metav1.Condition{Type: addonsv1.HealthyCondition, Status: metav1.ConditionFalse, ObservedGeneration: hrp.Generation}
	ready := meta.FindStatusCondition(hrp.Status.Conditions, addonsv1.ReadyCondition)
	switch {
	case s.paused:
		return
	case ready == nil || ready.Status != metav1.ConditionTrue:
		cond.Reason, cond.Message = addonsv1.ReleasesNotReadyReason, "the release is not Ready"
		if ready != nil {
			cond.Reason = ready.Reason
		}
	case !s.healthChecked:
		if c := meta.FindStatusCondition(hrp.Status.Conditions, addonsv1.HealthyCondition); c != nil && c.ObservedGeneration == hrp.Generation && c.Reason != addonsv1.InstallingReason {
			return // nothing new was learnt
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, addonsv1.InstallingReason, "checking the release's workloads"
	case s.healthErr != nil:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, addonsv1.ClusterUnreachableReason, fmt.Sprintf("reading the workloads: %v", s.healthErr)
	case len(s.unavailable) > 0:
		cond.Reason, cond.Message = addonsv1.WorkloadsNotAvailableReason, strings.Join(s.unavailable, ", ")
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, addonsv1.ReadyReason, "the release is Ready and its workloads are available"
	}
	meta.SetStatusCondition(&hrp.Status.Conditions, cond)
}
