package cluster

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// The status of a ClusterClass cluster comes from its CAPI Cluster, which Cluster API's
// controllers keep up to date for any provider: its TopologyReconciled, ControlPlaneInitialized
// and ControlPlaneAvailable conditions and status.controlPlane (replicas and the versions they
// run); and from its MachineDeployments, as for the other providers. The setters are pure.
//
// ControlPlaneReady is True when the control plane is initialized and available, every replica
// runs the version the spec asks for and is up to date, and as many are ready as the spec asks.
// Until then its reason says what is in the way: the spec (InvalidSpec), a provider that is not
// installed (ProviderNotInstalled), the topology controller (TopologyNotReconciled: a failure,
// or a ClusterClass it has not reconciled), an upgrade (Upgrading), or the control plane
// (WaitingForControlPlane, with Cluster API's message).

// setStatus writes a ClusterClass cluster's version, ControlPlaneReady and WorkersReady.
func (p *clusterClassProvider) setStatus(s *scope) {
	c := s.cluster
	c.Status.KubernetesVersion = ""
	if s.capiCluster != nil {
		c.Status.KubernetesVersion = lowestVersion(capiControlPlane(s.capiCluster).Versions)
	}
	notServed := ""
	if len(p.notServed) > 0 {
		notServed = p.notServedMessage()
	}
	setTopologyControlPlaneReady(c, s.version, s.capiCluster, notServed, controlPlaneErrors(s.invalid))
	setWorkersReady(c, s.version, nil, s.machineDeployments, workerErrors(s.invalid))
	holdTopologyWorkers(c, s.version, s.capiCluster)
}

// holdTopologyWorkers keeps WorkersReady False while Cluster API still moves workers to the
// topology: while a worker Machine runs another version than the spec asks for (the CAPI
// Cluster's status.workers.versions), or while the topology controller reports an upgrade or a
// creation under way (TopologyReconciled False). A MachineDeployment alone can look done between
// two steps of a rollout.
func holdTopologyWorkers(c *flotillav1.Cluster, version string, capi *clusterv1.Cluster) {
	cond := meta.FindStatusCondition(c.Status.Conditions, flotillav1.WorkersReadyCondition)
	if capi == nil || cond == nil || cond.Status != metav1.ConditionTrue {
		return
	}
	held := *cond
	held.Status = metav1.ConditionFalse
	var workers clusterv1.WorkersStatus
	if capi.Status.Workers != nil {
		workers = *capi.Status.Workers
	}
	topologyReconciled := conditions.Get(capi, clusterv1.ClusterTopologyReconciledCondition)
	switch {
	case version != "" && (len(workers.Versions) > 1 || (len(workers.Versions) == 1 && !kubeversion.Equal(workers.Versions[0].Version, version))):
		held.Reason = flotillav1.UpgradingReason
		held.Message = fmt.Sprintf("workers run %s, rolling out %s", versionsString(workers.Versions), version)
	case topologyReconciled != nil && topologyReconciled.Status == metav1.ConditionFalse:
		held.Reason = flotillav1.WaitingForWorkersReason
		if strings.Contains(topologyReconciled.Reason, "Upgrad") {
			held.Reason = flotillav1.UpgradingReason
		}
		held.Message = "Cluster API's topology controller: " + reasonAndMessage(topologyReconciled)
	default:
		return
	}
	setCondition(c, held)
}

// setTopologyControlPlaneReady: see the comment at the top of this file. notServed, when not
// empty, says which provider is not installed.
func setTopologyControlPlaneReady(c *flotillav1.Cluster, version string, capi *clusterv1.Cluster, notServed string, invalid field.ErrorList) {
	cond := metav1.Condition{Type: flotillav1.ControlPlaneReadyCondition, Status: metav1.ConditionFalse}
	var topologyReconciled, initialized, available *metav1.Condition
	var cp clusterv1.ClusterControlPlaneStatus
	if capi != nil {
		topologyReconciled = conditions.Get(capi, clusterv1.ClusterTopologyReconciledCondition)
		initialized = conditions.Get(capi, clusterv1.ClusterControlPlaneInitializedCondition)
		available = conditions.Get(capi, clusterv1.ClusterControlPlaneAvailableCondition)
		cp = capiControlPlane(capi)
	}
	desired := ptr.Deref(cp.DesiredReplicas, c.Spec.ControlPlane.Count)
	switch {
	case len(invalid) > 0:
		cond.Reason, cond.Message = flotillav1.InvalidSpecReason, errorsMessage(invalid)
	case notServed != "":
		cond.Reason, cond.Message = flotillav1.ProviderNotInstalledReason, notServed
	case capi == nil:
		cond.Reason = flotillav1.WaitingForControlPlaneReason
		cond.Message = fmt.Sprintf("CAPI Cluster %s does not exist yet", c.Name)
	case topologyReconciled != nil && topologyReconciled.Status == metav1.ConditionFalse && topologyBlocked(topologyReconciled.Reason):
		cond.Reason = flotillav1.TopologyNotReconciledReason
		cond.Message = "Cluster API's topology controller: " + reasonAndMessage(topologyReconciled)
	case initialized == nil || initialized.Status != metav1.ConditionTrue:
		cond.Reason = flotillav1.WaitingForControlPlaneReason
		cond.Message = "waiting for the control plane to be initialized"
		if initialized != nil && initialized.Message != "" {
			cond.Message += " (" + initialized.Message + ")"
		}
	case len(cp.Versions) == 0:
		cond.Reason = flotillav1.WaitingForControlPlaneReason
		cond.Message = "waiting for the control plane to report the version its machines run"
	case version != "" && (len(cp.Versions) != 1 || !kubeversion.Equal(cp.Versions[0].Version, version) ||
		ptr.Deref(cp.UpToDateReplicas, 0) < ptr.Deref(cp.Replicas, 0)):
		cond.Reason = flotillav1.UpgradingReason
		cond.Message = fmt.Sprintf("control plane runs %s, rolling out %s: %d of %d machines up to date",
			orUnknown(versionsString(cp.Versions)), version, ptr.Deref(cp.UpToDateReplicas, 0), ptr.Deref(cp.Replicas, 0))
	case available == nil || available.Status != metav1.ConditionTrue:
		cond.Reason = flotillav1.WaitingForControlPlaneReason
		cond.Message = "waiting for the control plane to be available"
		if available != nil && available.Message != "" {
			cond.Message += " (" + available.Message + ")"
		}
	case ptr.Deref(cp.ReadyReplicas, 0) < desired:
		cond.Reason = flotillav1.WaitingForControlPlaneReason
		cond.Message = fmt.Sprintf("%d of %d control plane machines ready", ptr.Deref(cp.ReadyReplicas, 0), desired)
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, flotillav1.ReadyReason
		cond.Message = fmt.Sprintf("control plane %s is available", cp.Versions[0].Version)
		if ep := capi.Spec.ControlPlaneEndpoint; ep.Host != "" {
			cond.Message += fmt.Sprintf(" at %s:%d", ep.Host, ep.Port)
		}
		cond.Message += fmt.Sprintf(", %d of %d machines ready", ptr.Deref(cp.ReadyReplicas, 0), desired)
	}
	setCondition(c, cond)
}

// topologyBlocked: reasons of a False TopologyReconciled that stop the cluster, rather than say
// that an upgrade or a creation is under way (which the other cases report).
func topologyBlocked(reason string) bool {
	return reason == clusterv1.ClusterTopologyReconciledFailedReason ||
		reason == clusterv1.ClusterTopologyReconciledClusterClassNotReconciledReason
}

func capiControlPlane(capi *clusterv1.Cluster) clusterv1.ClusterControlPlaneStatus {
	if capi.Status.ControlPlane == nil {
		return clusterv1.ClusterControlPlaneStatus{}
	}
	return *capi.Status.ControlPlane
}

// lowestVersion is the oldest of versions; "" when there are none.
func lowestVersion(versions []clusterv1.StatusVersion) string {
	lowest := ""
	for _, v := range versions {
		if lowest == "" || kubeversion.AtLeast(lowest, v.Version) {
			lowest = v.Version
		}
	}
	return lowest
}

// versionsString is "v1.35.4 (1), v1.36.3 (2)": the versions machines run, with how many.
func versionsString(versions []clusterv1.StatusVersion) string {
	parts := make([]string, 0, len(versions))
	for _, v := range versions {
		parts = append(parts, fmt.Sprintf("%s (%d)", v.Version, v.Replicas))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
