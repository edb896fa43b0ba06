package localmachine

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
)

// setStatus turns what a reconcile learned into the LocalMachine's status: provisioned,
// nodeName, addresses, and the Ready and NodeReady conditions.
func setStatus(s *scope) {
	lm := s.localMachine
	if s.node != nil {
		lm.Status.Initialization.Provisioned = ptr.To(true)
		lm.Status.NodeName = s.node.Name
		lm.Status.Addresses = addresses(s.node)
	}
	setReadyCondition(s)
	setNodeReadyCondition(s)
	if lm.Spec.Node == infrav1.RealNode {
		setProcessesRunningCondition(s)
	}
}

// addresses returns the machine addresses of node, InternalIP first.
func addresses(node *corev1.Node) []infrav1.MachineAddress {
	var out []infrav1.MachineAddress
	for _, kind := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP, corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS} {
		for _, address := range node.Status.Addresses {
			if address.Type == kind {
				out = append(out, infrav1.MachineAddress{Type: string(address.Type), Address: address.Address})
			}
		}
	}
	return out
}

// setReadyCondition sets Ready, which CAPI mirrors into the Machine's InfrastructureReady: True
// once the Node exists (a real node's kubelet registered it).
func setReadyCondition(s *scope) {
	lm := s.localMachine
	condition := metav1.Condition{Type: infrav1.ReadyCondition, Status: metav1.ConditionFalse}
	switch {
	case !lm.DeletionTimestamp.IsZero():
		condition.Reason = infrav1.DeletingReason
		condition.Message = fmt.Sprintf("Deleting the %s Node", nodeKind(lm))
	case s.nodeErr != nil:
		condition.Reason = infrav1.NodeCreateFailedReason
		condition.Message = s.nodeErr.Error()
	case s.node != nil || ptr.Deref(lm.Status.Initialization.Provisioned, false):
		condition.Status = metav1.ConditionTrue
		condition.Reason = infrav1.ProvisionedReason
		if lm.Spec.Node == infrav1.RealNode {
			condition.Message = fmt.Sprintf("Real node %s joined the cluster", nodeName(s))
		} else {
			condition.Message = fmt.Sprintf("Simulated Node %s exists", nodeName(s))
		}
	default:
		condition.Reason, condition.Message = waitingForNode(s)
	}
	conditions.Set(lm, condition)
}

// setNodeReadyCondition sets NodeReady from the Ready condition of the Node, which kwok sets for
// a simulated Node and kubelet for a real one.
func setNodeReadyCondition(s *scope) {
	lm := s.localMachine
	condition := metav1.Condition{Type: infrav1.NodeReadyCondition, Status: metav1.ConditionFalse}
	switch {
	case !lm.DeletionTimestamp.IsZero():
		condition.Reason = infrav1.DeletingReason
		condition.Message = fmt.Sprintf("Deleting the %s Node", nodeKind(lm))
	case s.nodeErr != nil:
		condition.Reason = infrav1.NodeCreateFailedReason
		condition.Message = s.nodeErr.Error()
	case s.node != nil:
		ready := nodeReady(s.node)
		switch {
		case ready == nil:
			condition.Reason = infrav1.WaitingForNodeReason
			condition.Message = fmt.Sprintf("Waiting for %s to report Node %s Ready", reporter(lm), s.node.Name)
		case ready.Status == corev1.ConditionTrue:
			condition.Status = metav1.ConditionTrue
			condition.Reason = infrav1.NodeReadyReason
			condition.Message = fmt.Sprintf("Node %s is Ready", s.node.Name)
		default:
			condition.Status = metav1.ConditionStatus(ready.Status)
			condition.Reason = infrav1.WaitingForNodeReason
			condition.Message = fmt.Sprintf("Node %s is not Ready: %s", s.node.Name, ready.Message)
		}
	case s.notConnected && ptr.Deref(lm.Status.Initialization.Provisioned, false):
		// The Node was there; while the workload cluster is unreachable nobody knows.
		condition.Status = metav1.ConditionUnknown
		condition.Reason, condition.Message = waitingForControlPlane(s)
	default:
		condition.Reason, condition.Message = waitingForNode(s)
	}
	conditions.Set(lm, condition)
}

// waitingForNode returns the reason and message of Provisioned and NodeReady while the Node is
// not there yet: a real node's failure or its joining, or what it waits for.
func waitingForNode(s *scope) (reason, message string) {
	switch {
	case s.real != nil && s.real.err != nil:
		return s.real.reason, s.real.err.Error()
	case s.real != nil && s.real.status != nil:
		return infrav1.JoiningReason, fmt.Sprintf("The kubelet of real node %s is joining the cluster", s.machine.Name)
	case s.machine == nil:
		return infrav1.WaitingForMachineReason, "Waiting for a CAPI Machine to own this LocalMachine"
	case s.cluster == nil:
		return infrav1.WaitingForClusterReason, fmt.Sprintf("Waiting for Cluster %s", s.machine.Spec.ClusterName)
	default:
		return waitingForControlPlane(s)
	}
}

// waitingForControlPlane returns the reason and message while the workload cluster cannot be
// used yet.
func waitingForControlPlane(s *scope) (reason, message string) {
	switch {
	case !s.controlPlaneInitialized():
		return infrav1.WaitingForControlPlaneReason, "Waiting for the Cluster's control plane to be initialized"
	case s.notConnected:
		return infrav1.WaitingForControlPlaneReason, "Waiting for the connection to the workload cluster"
	case s.localMachine.Spec.Node == infrav1.RealNode:
		return infrav1.WaitingForNodeReason, "Waiting for the real node to start"
	default:
		return infrav1.WaitingForNodeReason, "Waiting for the simulated Node to be created"
	}
}

// reporter is who reports the Node of lm Ready.
func reporter(lm *infrav1.LocalMachine) string {
	if lm.Spec.Node == infrav1.RealNode {
		return "kubelet"
	}
	return "kwok"
}

// setProcessesRunningCondition sets ProcessesRunning of a real node from its processes: True
// when each runs; False while one waits to be started again (CrashLoopBackOff once it failed
// process.CrashLoopFailures times in a row, with the end of its log), or when the node could not
// be set up.
func setProcessesRunningCondition(s *scope) {
	lm := s.localMachine
	condition := metav1.Condition{Type: infrav1.ProcessesRunningCondition, Status: metav1.ConditionFalse}
	switch {
	case !lm.DeletionTimestamp.IsZero():
		condition.Reason, condition.Message = infrav1.DeletingReason, "Deleting the real node"
	case s.real == nil:
		condition.Reason, condition.Message = waitingForControlPlane(s)
	case s.real.status == nil && s.real.err != nil:
		condition.Reason, condition.Message = s.real.reason, s.real.err.Error()
	case s.real.status == nil:
		condition.Reason, condition.Message = waitingForControlPlane(s)
	default:
		condition.Status, condition.Reason, condition.Message = processesRunning(s.real.status.Processes)
	}
	conditions.Set(lm, condition)
}

// processesRunning summarises the processes of a real node as a condition.
func processesRunning(processes []realnode.ProcessStatus) (metav1.ConditionStatus, string, string) {
	var names []string
	for _, p := range processes {
		names = append(names, p.Name)
		switch {
		case p.CrashLooping():
			next := "started again"
			if p.PID == 0 {
				next = "next start at " + p.NextStart.UTC().Format(time.RFC3339)
			}
			return metav1.ConditionFalse, infrav1.CrashLoopBackOffReason, fmt.Sprintf(
				"%s exited %d times in a row within %s of its start; %s. The end of its log:\n%s",
				p.Name, p.Failures, process.StableAfter, next, p.LogTail)
		case p.PID == 0:
			return metav1.ConditionFalse, infrav1.RestartingReason, fmt.Sprintf("%s exited and is started again at %s",
				p.Name, p.NextStart.UTC().Format(time.RFC3339))
		}
	}
	return metav1.ConditionTrue, infrav1.ProcessesRunningReason, strings.Join(names, ", ") + " run"
}

// nodeName is the name of the simulated Node, observed or recorded.
func nodeName(s *scope) string {
	if s.node != nil {
		return s.node.Name
	}
	return s.localMachine.Status.NodeName
}
