package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/capiobjects"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// The setters below turn the facts a reconcile gathered (the scope) into the Cluster's status.
// They are pure and run once, deferred, at the end of every reconcile, so every path, early
// returns and errors included, leaves conditions that say why.

// setStatus writes every status field from the scope.
func setStatus(s *scope) {
	c := s.cluster
	if s.pause == notPaused && !s.deleting {
		c.Status.ObservedGeneration = c.Generation
	}
	s.provider.setStatus(s)
	setPaused(c, s.pause)
	setReady(c, s)
	setPhase(c, s)
}

// ownedConditions are the types of the conditions the reconciler writes on a Cluster. Other
// components write others (the packages component PackagesReady), each applying its own as its
// own field manager.
var ownedConditions = []string{
	flotillav1.ReadyCondition, flotillav1.ControlPlaneReadyCondition, flotillav1.WorkersReadyCondition, flotillav1.PausedCondition,
}

// ownStatus is the part of c's status the reconciler owns and applies: all of it but the other
// components' conditions, which the copy of c a reconcile read may hold as they were before
// their last write.
func ownStatus(c *flotillav1.Cluster) *flotillav1.Cluster {
	owned := &flotillav1.Cluster{Status: *c.Status.DeepCopy()}
	owned.Status.Conditions = slices.DeleteFunc(owned.Status.Conditions, func(cond metav1.Condition) bool {
		return !slices.Contains(ownedConditions, cond.Type)
	})
	return owned
}

// setControlPlaneReady: True once the LocalControlPlane is Available and runs the version the
// spec asks for (version; empty when unknown).
func setControlPlaneReady(c *flotillav1.Cluster, version string, lcp *controlplanev1.LocalControlPlane, invalid field.ErrorList) {
	cond := metav1.Condition{Type: flotillav1.ControlPlaneReadyCondition, Status: metav1.ConditionFalse}
	available := availableCondition(lcp)
	switch {
	case len(invalid) > 0:
		cond.Reason, cond.Message = flotillav1.InvalidSpecReason, errorsMessage(invalid)
	case lcp == nil:
		cond.Reason = flotillav1.WaitingForControlPlaneReason
		cond.Message = fmt.Sprintf("LocalControlPlane %s does not exist yet", c.Name)
	case available == nil:
		cond.Reason = flotillav1.WaitingForControlPlaneReason
		cond.Message = fmt.Sprintf("waiting for LocalControlPlane %s to report Available", lcp.Name)
	case available.Status != metav1.ConditionTrue:
		cond.Reason = flotillav1.WaitingForControlPlaneReason
		cond.Message = fmt.Sprintf("LocalControlPlane %s is not available (%s)", lcp.Name, reasonAndMessage(available))
	case version != "" && !kubeversion.Equal(lcp.Status.Version, version):
		cond.Reason = flotillav1.UpgradingReason
		cond.Message = fmt.Sprintf("control plane runs %s, upgrading to %s", orUnknown(lcp.Status.Version), version)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, flotillav1.ReadyReason
		cond.Message = fmt.Sprintf("control plane %s is available", lcp.Status.Version)
		if ep := lcp.Spec.ControlPlaneEndpoint; ep.Host != "" {
			cond.Message += fmt.Sprintf(" at %s:%d", ep.Host, ep.Port)
		}
	}
	setCondition(c, cond)
}

// groupProgress is how far one worker node group is from what the spec asks.
type groupProgress struct {
	ready     int32
	done      bool
	upgrading bool
	message   string
}

// workerGroupProgress compares a group's MachineDeployment (nil when missing) with the group.
// A group is done when its MachineDeployment has observed its latest spec, runs version, and
// has exactly count machines, all up to date and ready.
func workerGroupProgress(c *flotillav1.Cluster, group flotillav1.WorkerNodeGroup, version string, md *clusterv1.MachineDeployment) groupProgress {
	if md == nil {
		return groupProgress{message: fmt.Sprintf("MachineDeployment %s does not exist yet", capiobjects.GroupName(c.Name, group.Name))}
	}
	replicas := ptr.Deref(md.Status.Replicas, 0)
	ready := ptr.Deref(md.Status.ReadyReplicas, 0)
	upToDate := ptr.Deref(md.Status.UpToDateReplicas, 0)
	p := groupProgress{ready: ready}
	versionMatches := version == "" || kubeversion.Equal(md.Spec.Template.Spec.Version, version)
	p.upgrading = !versionMatches || (upToDate < replicas)
	observed := md.Status.ObservedGeneration >= md.Generation
	p.done = observed && versionMatches && replicas == group.Count && ready == group.Count && upToDate == group.Count

	switch {
	case !versionMatches:
		p.message = fmt.Sprintf("%d of %d ready, waiting for the control plane before upgrading to %s", min(ready, group.Count), group.Count, version)
	case upToDate < replicas:
		p.message = fmt.Sprintf("rolling out: %d of %d machines up to date, %d ready", upToDate, replicas, ready)
	case replicas > group.Count:
		p.message = fmt.Sprintf("scaling down from %d to %d machines", replicas, group.Count)
	case !observed:
		p.message = fmt.Sprintf("%d of %d ready, waiting for the MachineDeployment controller", ready, group.Count)
	default:
		p.message = fmt.Sprintf("%d of %d ready", ready, group.Count)
	}
	return p
}

// setWorkersReady: True when every worker node group is done (see workerGroupProgress) at the
// cluster's version, or at the one the group pins (groupVersions, by group name). Also counts
// status.workers.
func setWorkersReady(c *flotillav1.Cluster, version string, groupVersions map[string]string, mds map[string]*clusterv1.MachineDeployment, invalid field.ErrorList) {
	var desired, ready int32
	var waiting []string
	upgrading := false
	for _, group := range c.Spec.WorkerNodeGroups {
		p := workerGroupProgress(c, group, cmp.Or(groupVersions[group.Name], version), mds[group.Name])
		desired += group.Count
		ready += min(p.ready, group.Count)
		if !p.done {
			waiting = append(waiting, fmt.Sprintf("%s: %s", group.Name, p.message))
			upgrading = upgrading || p.upgrading
		}
	}
	c.Status.Workers = flotillav1.WorkerStatus{Desired: desired, Ready: ready}

	cond := metav1.Condition{Type: flotillav1.WorkersReadyCondition, Status: metav1.ConditionFalse}
	summary := fmt.Sprintf("%d of %d workers ready", ready, desired)
	switch {
	case len(invalid) > 0:
		cond.Reason, cond.Message = flotillav1.InvalidSpecReason, errorsMessage(invalid)
	case len(c.Spec.WorkerNodeGroups) == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, flotillav1.ReadyReason, "no worker node groups"
	case len(waiting) == 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, flotillav1.ReadyReason, summary
	case upgrading:
		cond.Reason, cond.Message = flotillav1.UpgradingReason, summary+"; "+strings.Join(waiting, "; ")
	default:
		cond.Reason, cond.Message = flotillav1.WaitingForWorkersReason, summary+"; "+strings.Join(waiting, "; ")
	}
	setCondition(c, cond)
}

// setPaused: True while reconciliation is paused, saying by what.
func setPaused(c *flotillav1.Cluster, pause pauseState) {
	cond := metav1.Condition{Type: flotillav1.PausedCondition, Status: metav1.ConditionTrue, Reason: flotillav1.PausedReason}
	switch pause {
	case pausedByAnnotation:
		cond.Message = fmt.Sprintf("the %s annotation pauses reconciliation of this cluster and its CAPI Cluster; remove it to resume", clusterv1.PausedAnnotation)
	case pausedForMove:
		cond.Message = fmt.Sprintf("the %s annotation holds reconciliation while the CLI moves this cluster to another management cluster; the CLI removes it when the move is over", flotillav1.MovingAnnotation)
	case pausedByCAPI:
		cond.Message = fmt.Sprintf("the CAPI Cluster %s is paused or missing while someone other than Flotilla (such as clusterctl move) has paused it; reconciliation resumes when it exists and is unpaused", c.Name)
	default:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, flotillav1.NotPausedReason, "reconciliation is not paused"
	}
	setCondition(c, cond)
}

// setReady: True when the control plane and the workers are ready; otherwise the reason of the
// first thing in the way: deletion, a pause, an invalid spec, the control plane, the workers.
func setReady(c *flotillav1.Cluster, s *scope) {
	cond := metav1.Condition{Type: flotillav1.ReadyCondition, Status: metav1.ConditionFalse}
	cp := meta.FindStatusCondition(c.Status.Conditions, flotillav1.ControlPlaneReadyCondition)
	workers := meta.FindStatusCondition(c.Status.Conditions, flotillav1.WorkersReadyCondition)
	switch {
	case s.deleting:
		cond.Reason = flotillav1.DeletingReason
		cond.Message = fmt.Sprintf("deleting: waiting for the CAPI Cluster %s to be deleted with its machines and control plane", c.Name)
		if s.deletingForMove {
			cond.Message = "deleting after clusterctl move copied this cluster to another management cluster"
		}
		if len(s.preDeleteHooks) > 0 {
			cond.Message = fmt.Sprintf("deleting: waiting for %s to uninstall from the cluster before its control plane goes (annotations %s<name>)",
				strings.Join(s.preDeleteHooks, ", "), flotillav1.PreDeleteHookAnnotationPrefix)
		}
	case s.pause != notPaused:
		cond.Reason = flotillav1.PausedReason
		cond.Message = "reconciliation is paused; see the Paused condition"
	case len(s.invalid) > 0:
		cond.Reason, cond.Message = flotillav1.InvalidSpecReason, errorsMessage(s.invalid)
	case cp.Status != metav1.ConditionTrue:
		cond.Reason, cond.Message = cp.Reason, cp.Message
	case workers.Status != metav1.ConditionTrue:
		cond.Reason, cond.Message = workers.Reason, workers.Message
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, flotillav1.ReadyReason
		cond.Message = cp.Message + "; " + workers.Message
	}
	setCondition(c, cond)
}

// setPhase sums the conditions up in one word for `flotilla get clusters`.
func setPhase(c *flotillav1.Cluster, s *scope) {
	ready := meta.FindStatusCondition(c.Status.Conditions, flotillav1.ReadyCondition)
	switch {
	case s.deleting:
		c.Status.Phase = flotillav1.ClusterPhaseDeleting
	case s.pause != notPaused:
		c.Status.Phase = flotillav1.ClusterPhasePaused
	case len(s.invalid) > 0:
		c.Status.Phase = flotillav1.ClusterPhaseFailed
	case ready.Status == metav1.ConditionTrue:
		c.Status.Phase = flotillav1.ClusterPhaseReady
	case ready.Reason == flotillav1.UpgradingReason:
		c.Status.Phase = flotillav1.ClusterPhaseUpgrading
	default:
		c.Status.Phase = flotillav1.ClusterPhaseProvisioning
	}
}

func setCondition(c *flotillav1.Cluster, cond metav1.Condition) {
	cond.ObservedGeneration = c.Generation
	meta.SetStatusCondition(&c.Status.Conditions, cond)
}

func availableCondition(lcp *controlplanev1.LocalControlPlane) *metav1.Condition {
	if lcp == nil {
		return nil
	}
	return meta.FindStatusCondition(lcp.Status.Conditions, controlplanev1.AvailableCondition)
}

func reasonAndMessage(cond *metav1.Condition) string {
	if cond.Message == "" {
		return cond.Reason
	}
	return cond.Reason + ": " + cond.Message
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown version"
	}
	return s
}

// errorsMessage joins field errors into one condition message, each naming its field.
func errorsMessage(errs field.ErrorList) string {
	msgs := make([]string, 0, len(errs))
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	return strings.Join(msgs, "; ")
}

var workerGroupsPath = field.NewPath("spec", "workerNodeGroups").String()

// workerErrors are the invalid-spec errors about worker node groups.
func workerErrors(errs field.ErrorList) field.ErrorList {
	return errs.Filter(func(err error) bool { return !isWorkerError(err) })
}

// controlPlaneErrors are the invalid-spec errors about anything else: they stop the control plane.
func controlPlaneErrors(errs field.ErrorList) field.ErrorList {
	return errs.Filter(isWorkerError)
}

func isWorkerError(err error) bool {
	var fe *field.Error
	return errors.As(err, &fe) && strings.HasPrefix(fe.Field, workerGroupsPath)
}
