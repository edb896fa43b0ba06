package cluster

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/capiobjects"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// The status of a Packet cluster comes from its Cluster API objects: the PacketCluster (the
// endpoint's elastic IP), the KubeadmControlPlane and the Machines of the control plane and of
// each MachineDeployment. The setters are pure, as the local provider's.
//
// ControlPlaneReady is True when the KubeadmControlPlane is initialized (Cluster API found the
// kubeadm-config ConfigMap through the endpoint: kubeadm init completed and the API server
// answers), runs the version the spec asks for with every replica up to date, and each of its
// replicas has a Machine whose device is active and whose Node is healthy. It does not wait for
// the KubeadmControlPlane's Available condition, which also needs etcd members and control plane
// static Pods to be observed through kubelets: a simulated device has neither (package devicesim),
// and on real devices a healthy Node of every control plane Machine follows the same kubeadm run.

// packetObserved is what a reconcile read of a Packet cluster's Cluster API objects.
type packetObserved struct {
	// packetCluster and kcp are nil when they do not exist.
	packetCluster *infrav1.PacketCluster
	kcp           *kubeadmcontrolplanev1.KubeadmControlPlane
	// machines are the cluster's Machines (label cluster.x-k8s.io/cluster-name).
	machines []clusterv1.Machine
}

// machineStage is how far a Machine is on its way to a healthy Node, the furthest behind last.
type machineStage int

const (
	stageReady machineStage = iota
	stageWaitingForNode
	stageProvisioning
	stageWaitingForBootstrap
	stageFailed
)

// stageNames describe a stage with a count, for messages: "2 devices provisioning".
var stageNames = map[machineStage]string{
	stageWaitingForNode:      "device active, waiting for its Node",
	stageProvisioning:        "device provisioning",
	stageWaitingForBootstrap: "waiting for kubeadm bootstrap data",
	stageFailed:              "device failed",
}

// stageOf says where a Machine is, with the detail its conditions give.
func stageOf(m *clusterv1.Machine) (machineStage, string) {
	infra := conditions.Get(m, clusterv1.MachineInfrastructureReadyCondition)
	switch {
	case infra != nil && infra.Status == metav1.ConditionFalse &&
		(infra.Reason == infrav1.DeviceFailedReason || infra.Reason == infrav1.DeviceNotFoundReason):
		return stageFailed, infra.Message
	case !conditions.IsTrue(m, clusterv1.MachineBootstrapConfigReadyCondition):
		return stageWaitingForBootstrap, "waiting for the kubeadm bootstrap provider to write its cloud-init"
	case infra == nil || infra.Status != metav1.ConditionTrue:
		detail := "waiting for its device"
		// Until the PacketMachine reconciles the bootstrap data, the Machine still mirrors
		// "waiting for bootstrap data", which is no longer true.
		if infra != nil && infra.Message != "" && infra.Reason != infrav1.WaitingForBootstrapDataReason {
			detail = infra.Message
		}
		return stageProvisioning, detail
	case !m.Status.NodeRef.IsDefined():
		return stageWaitingForNode, "device active, waiting for its Node to register"
	case !conditions.IsTrue(m, clusterv1.MachineNodeHealthyCondition):
		return stageWaitingForNode, fmt.Sprintf("Node %s is not healthy yet", m.Status.NodeRef.Name)
	default:
		return stageReady, ""
	}
}

// stageReasons are the condition reasons of the stage a set of machines is held back by.
var stageReasons = map[machineStage]string{
	stageWaitingForNode:      flotillav1.WaitingForNodesReason,
	stageProvisioning:        flotillav1.DevicesProvisioningReason,
	stageWaitingForBootstrap: flotillav1.WaitingForControlPlaneReason,
	stageFailed:              flotillav1.MachinesFailedReason,
}

// machinesProgress sums up machines that are not deleting: how many are ready, the stage of the
// one furthest behind, and a message such as "1 device provisioning, 2 device active, waiting
// for its Node (m-1: Device 123 is provisioning)".
func machinesProgress(machines []*clusterv1.Machine) (ready int32, worst machineStage, message string) {
	counts := map[machineStage]int{}
	var firstDetail string
	for _, m := range machines {
		stage, detail := stageOf(m)
		counts[stage]++
		if stage == stageReady {
			ready++
			continue
		}
		if stage > worst {
			worst, firstDetail = stage, m.Name+": "+detail
		}
	}
	var parts []string
	for _, stage := range []machineStage{stageFailed, stageWaitingForBootstrap, stageProvisioning, stageWaitingForNode} {
		if counts[stage] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[stage], stageNames[stage]))
		}
	}
	if len(parts) > 0 {
		message = strings.Join(parts, ", ") + " (" + firstDetail + ")"
	}
	return ready, worst, message
}

// controlPlaneMachines returns the control plane Machines that are not being deleted, by name.
func (o *packetObserved) controlPlaneMachines() []*clusterv1.Machine {
	return o.selectMachines(func(m *clusterv1.Machine) bool {
		_, cp := m.Labels[clusterv1.MachineControlPlaneLabel]
		return cp
	})
}

// groupMachines returns the Machines of a worker node group's MachineDeployment that are not
// being deleted.
func (o *packetObserved) groupMachines(cluster, group string) []*clusterv1.Machine {
	md := capiobjects.GroupName(cluster, group)
	return o.selectMachines(func(m *clusterv1.Machine) bool { return m.Labels[clusterv1.MachineDeploymentNameLabel] == md })
}

func (o *packetObserved) selectMachines(keep func(*clusterv1.Machine) bool) []*clusterv1.Machine {
	var out []*clusterv1.Machine
	for i := range o.machines {
		m := &o.machines[i]
		if m.DeletionTimestamp.IsZero() && keep(m) {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *clusterv1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// kcpVersion is the lowest Kubernetes version the KubeadmControlPlane's machines run; empty
// when it has none.
func kcpVersion(kcp *kubeadmcontrolplanev1.KubeadmControlPlane) string {
	if kcp == nil || len(kcp.Status.Versions) == 0 {
		return ""
	}
	return kcp.Status.Versions[0].Version
}

// setStatus writes a Packet cluster's version, ControlPlaneReady and WorkersReady.
func (p *packetProvider) setStatus(s *scope) {
	c, o := s.cluster, &p.observed
	c.Status.KubernetesVersion = kcpVersion(o.kcp)
	setPacketControlPlaneReady(c, s.version, o, controlPlaneErrors(s.invalid))
	setPacketWorkersReady(c, s.version, nil, s.machineDeployments, o, workerErrors(s.invalid))
}

// setPacketControlPlaneReady: see the comment at the top of this file. Until it is True the
// reason says where the control plane is: the elastic IP, the first device, kubeadm init, the
// Nodes.
func setPacketControlPlaneReady(c *flotillav1.Cluster, version string, o *packetObserved, invalid field.ErrorList) {
	cond := metav1.Condition{Type: flotillav1.ControlPlaneReadyCondition, Status: metav1.ConditionFalse}
	kcp, pc := o.kcp, o.packetCluster
	machines := o.controlPlaneMachines()
	var replicas int32
	if kcp != nil {
		replicas = ptr.Deref(kcp.Spec.Replicas, 1)
	}
	ready, worst, progress := machinesProgress(machines)
	var pcReady *metav1.Condition
	if pc != nil {
		pcReady = conditions.Get(pc, infrav1.ReadyCondition)
	}
	switch {
	case len(invalid) > 0:
		cond.Reason, cond.Message = flotillav1.InvalidSpecReason, errorsMessage(invalid)
	case pc == nil:
		cond.Reason = flotillav1.WaitingForInfrastructureReason
		cond.Message = fmt.Sprintf("PacketCluster %s does not exist yet", c.Name)
	case pcReady == nil || pcReady.Status != metav1.ConditionTrue:
		cond.Reason = flotillav1.WaitingForInfrastructureReason
		cond.Message = fmt.Sprintf("PacketCluster %s has no control plane endpoint yet", pc.Name)
		if pcReady != nil {
			cond.Message += " (" + reasonAndMessage(pcReady) + ")"
		}
	case kcp == nil:
		cond.Reason = flotillav1.WaitingForControlPlaneReason
		cond.Message = fmt.Sprintf("KubeadmControlPlane %s does not exist yet", c.Name)
	case !ptr.Deref(kcp.Status.Initialization.ControlPlaneInitialized, false):
		cond.Reason, cond.Message = notInitialized(kcp, pc, machines, worst, progress)
	case version != "" && (!kubeversion.Equal(kcp.Spec.Version, version) || len(kcp.Status.Versions) > 1 ||
		ptr.Deref(kcp.Status.UpToDateReplicas, 0) < ptr.Deref(kcp.Status.Replicas, 0)):
		cond.Reason = flotillav1.UpgradingReason
		cond.Message = fmt.Sprintf("control plane runs %s, rolling out %s: %d of %d machines up to date",
			orUnknown(kcpVersion(kcp)), kcp.Spec.Version, ptr.Deref(kcp.Status.UpToDateReplicas, 0), ptr.Deref(kcp.Status.Replicas, 0))
	case ready < replicas || len(machines) != int(replicas):
		cond.Reason = stageReasons[worst]
		if worst == stageReady { // all there are ready, some are missing or too many
			cond.Reason = flotillav1.WaitingForControlPlaneReason
		}
		cond.Message = fmt.Sprintf("%d of %d control plane machines have a healthy Node", ready, replicas)
		if progress != "" {
			cond.Message += "; " + progress
		}
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, flotillav1.ReadyReason
		cond.Message = fmt.Sprintf("control plane %s is initialized at %s:%d, %d of %d machines have a healthy Node",
			kcpVersion(kcp), pc.Spec.ControlPlaneEndpoint.Host, pc.Spec.ControlPlaneEndpoint.Port, ready, replicas)
	}
	setCondition(c, cond)
}

// notInitialized is the reason and message of a control plane whose kubeadm init Cluster API
// has not seen complete: where its first machine is.
func notInitialized(kcp *kubeadmcontrolplanev1.KubeadmControlPlane, pc *infrav1.PacketCluster, machines []*clusterv1.Machine, worst machineStage, progress string) (string, string) {
	switch {
	case len(machines) == 0:
		return flotillav1.WaitingForControlPlaneReason, fmt.Sprintf("waiting for KubeadmControlPlane %s to create the first control plane Machine", kcp.Name)
	case worst >= stageProvisioning:
		return stageReasons[worst], "the first control plane machine is not up: " + progress
	default:
		ep := pc.Spec.ControlPlaneEndpoint
		return flotillav1.WaitingForKubeadmInitReason, fmt.Sprintf(
			"the device of Machine %s is active; waiting for kubeadm init on it and for Cluster API to read kubeadm-config from https://%s:%d",
			machines[0].Name, ep.Host, ep.Port)
	}
}

// setPacketWorkersReady is setWorkersReady (MachineDeployment replicas, versions, rollouts)
// with the reason and detail of the machines that hold the groups back.
func setPacketWorkersReady(c *flotillav1.Cluster, version string, groupVersions map[string]string, mds map[string]*clusterv1.MachineDeployment, o *packetObserved, invalid field.ErrorList) {
	setWorkersReady(c, version, groupVersions, mds, invalid)
	cond := *meta.FindStatusCondition(c.Status.Conditions, flotillav1.WorkersReadyCondition)
	if cond.Reason != flotillav1.WaitingForWorkersReason {
		return
	}
	var machines []*clusterv1.Machine
	for _, group := range c.Spec.WorkerNodeGroups {
		machines = append(machines, o.groupMachines(c.Name, group.Name)...)
	}
	_, worst, progress := machinesProgress(machines)
	if worst == stageReady {
		return
	}
	cond.Reason = stageReasons[worst]
	cond.Message += "; machines: " + progress
	setCondition(c, cond)
}
