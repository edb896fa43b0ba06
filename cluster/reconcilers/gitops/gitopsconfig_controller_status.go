package gitops

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
)

// Event reasons.
const (
	eventApplied    = "Applied"
	eventSyncFailed = flotillav1.SyncFailedReason
)

// setStatus turns what a sync found into the GitOpsConfig's status: the directory synced, the
// last applied commit and its clusters, and the Ready condition. Messages depend only on the
// state (no counts of this sync, no times), so an idle sync writes nothing.
func setStatus(s *scope) {
	st := &s.config.Status
	st.ObservedGeneration = s.config.Generation
	if s.management != nil {
		st.Path = gitopsrepo.ManagementDir(s.management.Name)
	}
	if s.synced {
		st.LastAppliedCommit = s.snapshot.Commit()
		st.Clusters = clusterNames(s.specs)
	}
	meta.SetStatusCondition(&st.Conditions, readyCondition(s))
}

// readyCondition is True once the branch's head is applied; otherwise its reason says why not.
func readyCondition(s *scope) metav1.Condition {
	cond := metav1.Condition{Type: flotillav1.ReadyCondition, Status: metav1.ConditionFalse, ObservedGeneration: s.config.Generation}
	switch {
	case s.paused != "":
		cond.Reason, cond.Message = flotillav1.PausedReason, "Not syncing: "+s.paused
	case s.management == nil:
		cond.Reason, cond.Message = flotillav1.WaitingForManagementClusterReason, "Waiting for a management cluster: "+s.waiting
	case s.failure != "":
		cond.Reason, cond.Message = flotillav1.SyncFailedReason, s.failure
	case s.synced:
		cond.Status, cond.Reason = metav1.ConditionTrue, flotillav1.SyncedReason
		cond.Message = fmt.Sprintf("Applied commit %s of %s: %s", short(s.snapshot.Commit()), s.repo, describeClusters(s))
	default:
		// Not reached: every path of Reconcile ends in one of the states above.
		cond.Reason, cond.Message = flotillav1.SyncFailedReason, "The sync stopped before applying anything"
	}
	return cond
}

// describeClusters summarises the clusters a synced commit holds.
func describeClusters(s *scope) string {
	names := clusterNames(s.specs)
	if len(names) == 0 {
		return fmt.Sprintf("%s holds no cluster spec of this GitOpsConfig", gitopsrepo.ManagementDir(s.management.Name))
	}
	return "clusters " + strings.Join(names, ", ")
}

// recordEvents records an Event for what the sync did: Normal when it applied changed specs,
// Warning when it failed with a message the condition did not already carry (a failure that
// repeats every interval is recorded once).
func (r *Reconciler) recordEvents(ctx context.Context, s *scope) {
	if len(s.applied) > 0 {
		r.Recorder.Eventf(s.config, nil, corev1.EventTypeNormal, eventApplied, "Sync",
			"Applied commit %s: %s", short(s.snapshot.Commit()), strings.Join(s.applied, ", "))
	}
	if s.failure == "" {
		return
	}
	log := ctrl.LoggerFrom(ctx)
	before := meta.FindStatusCondition(s.statusBase.Conditions, flotillav1.ReadyCondition)
	if before != nil && before.Reason == flotillav1.SyncFailedReason && before.Message == s.failure {
		log.V(1).Info("Sync failed again", "reason", s.failure)
		return
	}
	log.Info("Sync failed", "reason", s.failure)
	r.Recorder.Eventf(s.config, nil, corev1.EventTypeWarning, eventSyncFailed, "Sync", "%s", s.failure)
}
