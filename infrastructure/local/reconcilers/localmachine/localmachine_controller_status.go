package localmachine

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
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
// once the simulated Node exists.
func setReadyCondition(s *scope) {
	lm := s.localMachine
	condition := metav1.Condition{Type: infrav1.ReadyCondition, Status: metav1.ConditionFalse}
	switch {
	case !lm.DeletionTimestamp.IsZero():
		condition.Reason = infrav1.DeletingReason
		condition.Message = "Deleting the simulated Node"
	case s.nodeErr != nil:
		condition.Reason = infrav1.NodeCreateFailedReason
		condition.Message = s.nodeErr.Error()
	case s.node != nil || ptr.Deref(lm.Status.Initialization.Provisioned, false):
		condition.Status = metav1.ConditionTrue
		condition.Reason = infrav1.ProvisionedReason
		condition.Message = fmt.Sprintf("Simulated Node %s exists", nodeName(s))
	case s.machine == nil:
		condition.Reason = infrav1.WaitingForMachineReason
		condition.Message = "Waiting for a CAPI Machine to own this LocalMachine"
	case s.cluster == nil:
		condition.Reason = infrav1.WaitingForClusterReason
		condition.Message = fmt.Sprintf("Waiting for Cluster %s", s.machine.Spec.ClusterName)
	default:
		condition.Reason, condition.Message = waitingForControlPlane(s)
	}
	conditions.Set(lm, condition)
}

// setNodeReadyCondition sets NodeReady from the Ready condition of the simulated Node, which
// kwok sets.
func setNodeReadyCondition(s *scope) {
	lm := s.localMachine
	condition := metav1.Condition{Type: infrav1.NodeReadyCondition, Status: metav1.ConditionFalse}
	switch {
	case !lm.DeletionTimestamp.IsZero():
		condition.Reason = infrav1.DeletingReason
		condition.Message = "Deleting the simulated Node"
	case s.nodeErr != nil:
		condition.Reason = infrav1.NodeCreateFailedReason
		condition.Message = s.nodeErr.Error()
	case s.node != nil:
		ready := nodeReady(s.node)
		switch {
		case ready == nil:
			condition.Reason = infrav1.WaitingForNodeReason
			condition.Message = fmt.Sprintf("Waiting for kwok to report Node %s Ready", s.node.Name)
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
	case s.machine == nil:
		condition.Reason = infrav1.WaitingForMachineReason
		condition.Message = "Waiting for a CAPI Machine to own this LocalMachine"
	case s.cluster == nil:
		condition.Reason = infrav1.WaitingForClusterReason
		condition.Message = fmt.Sprintf("Waiting for Cluster %s", s.machine.Spec.ClusterName)
	default:
		condition.Reason, condition.Message = waitingForControlPlane(s)
	}
	conditions.Set(lm, condition)
}

// waitingForControlPlane returns the reason and message while the workload cluster cannot be
// used yet.
func waitingForControlPlane(s *scope) (reason, message string) {
	switch {
	case !s.controlPlaneInitialized():
		return infrav1.WaitingForControlPlaneReason, "Waiting for the Cluster's control plane to be initialized"
	case s.notConnected:
		return infrav1.WaitingForControlPlaneReason, "Waiting for the connection to the workload cluster"
	default:
		return infrav1.WaitingForNodeReason, "Waiting for the simulated Node to be created"
	}
}

// nodeName is the name of the simulated Node, observed or recorded.
func nodeName(s *scope) string {
	if s.node != nil {
		return s.node.Name
	}
	return s.localMachine.Status.NodeName
}
