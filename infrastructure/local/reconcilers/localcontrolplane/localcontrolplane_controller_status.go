package localcontrolplane

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/cluster-api/util/conditions"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// setStatus turns what a reconcile learned into the LocalControlPlane's status.
func setStatus(s *scope) {
	lcp := s.lcp
	lcp.Status.ExternalManagedControlPlane = ptr.To(true)
	if s.ready {
		lcp.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		lcp.Status.Version = s.version
	}
	if s.processes != nil && s.processes.NodeNetwork.IsValid() {
		lcp.Status.NodeNetwork = s.processes.NodeNetwork.String()
	}
	setAvailableCondition(s)
	setProcessesRunningCondition(s)
	setCertificatesAvailableCondition(s)
}

// blocked returns the reason and message of the first fact that keeps the control plane from
// running at all: deletion, no owner Cluster, a name conflict, missing binaries, or processes
// that failed to start.
func blocked(s *scope) (reason, message string, ok bool) {
	switch {
	case !s.lcp.DeletionTimestamp.IsZero():
		return controlplanev1.DeletingReason, "Stopping the control plane processes and removing their data", true
	case s.cluster == nil:
		return controlplanev1.WaitingForClusterReason, "Waiting for a CAPI Cluster that references this LocalControlPlane", true
	case s.conflict != nil:
		return controlplanev1.ClusterNameConflictReason, fmt.Sprintf(
			"LocalControlPlane %s/%s of another Cluster named %s holds this cluster name's data directory; rename this Cluster",
			s.conflict.Namespace, s.conflict.Name, s.clusterName), true
	case s.binariesErr != nil:
		return controlplanev1.BinariesMissingReason, s.binariesErr.Error(), true
	case s.ensureErr != nil:
		return controlplanev1.ProcessStartFailedReason, s.ensureErr.Error(), true
	}
	return "", "", false
}

// setAvailableCondition sets Available, which CAPI mirrors into the Cluster's
// ControlPlaneAvailable: True while kube-apiserver answers /readyz.
func setAvailableCondition(s *scope) {
	condition := metav1.Condition{Type: controlplanev1.AvailableCondition, Status: metav1.ConditionFalse}
	if reason, message, ok := blocked(s); ok {
		condition.Reason, condition.Message = reason, message
	} else {
		switch {
		case s.ready:
			condition.Status = metav1.ConditionTrue
			condition.Reason = controlplanev1.AvailableReason
			condition.Message = fmt.Sprintf("kube-apiserver %s answers on %s", s.version, serverURL(s.lcp.Spec.ControlPlaneEndpoint))
		case s.readyErr != nil && s.initialized():
			condition.Reason = controlplanev1.UnavailableReason
			condition.Message = "kube-apiserver does not answer /readyz: " + s.readyErr.Error()
		case s.processes == nil:
			// Nothing was probed (an earlier phase failed): keep what is known.
			if conditions.Has(s.lcp, controlplanev1.AvailableCondition) {
				return
			}
			condition.Reason = controlplanev1.StartingReason
			condition.Message = "Waiting for the control plane processes to start"
		default:
			condition.Reason = controlplanev1.StartingReason
			condition.Message = "Waiting for kube-apiserver to answer /readyz"
		}
	}
	conditions.Set(s.lcp, condition)
}

// setProcessesRunningCondition sets ProcessesRunning: True when every process of the control
// plane runs, naming those that were restarted; False while one waits out its back-off, saying
// how it ended and when it starts again.
func setProcessesRunningCondition(s *scope) {
	condition := metav1.Condition{Type: controlplanev1.ProcessesRunningCondition, Status: metav1.ConditionFalse}
	if reason, message, ok := blocked(s); ok {
		condition.Reason, condition.Message = reason, message
		conditions.Set(s.lcp, condition)
		return
	}
	if s.processes == nil {
		if conditions.Has(s.lcp, controlplanev1.ProcessesRunningCondition) {
			return
		}
		condition.Reason = controlplanev1.StartingReason
		condition.Message = "Waiting to start the control plane processes"
		conditions.Set(s.lcp, condition)
		return
	}
	var names, restarts, down []string
	severity := -1
	for _, p := range s.processes.Processes {
		if p.PID == 0 {
			down = append(down, describeExit(p))
			severity = max(severity, waitingSeverity(p.History))
			continue
		}
		names = append(names, p.Name)
		if p.History.Restarts > 0 {
			restarts = append(restarts, fmt.Sprintf("%s %d time(s) (last: %s)", p.Name, p.History.Restarts, p.History.Ended()))
		}
	}
	if len(down) > 0 {
		condition.Reason = waitingReasons[severity]
		condition.Message = strings.Join(down, "; ")
		conditions.Set(s.lcp, condition)
		return
	}
	condition.Status = metav1.ConditionTrue
	condition.Reason = controlplanev1.ProcessesRunningReason
	condition.Message = "Running " + strings.Join(names, ", ")
	if len(s.restarted) > 0 {
		condition.Message += "; restarted " + strings.Join(s.restarted, ", ")
	} else if len(restarts) > 0 {
		condition.Message += "; restarted " + strings.Join(restarts, ", ")
	}
	conditions.Set(s.lcp, condition)
}

// waitingReasons are the reasons of ProcessesRunning while a process waits out its back-off,
// from the least to the most telling: when several wait, the condition names the last.
var waitingReasons = []string{
	controlplanev1.ProcessRestartingReason,
	controlplanev1.CrashLoopBackOffReason,
	controlplanev1.PortInUseReason,
}

// waitingSeverity returns the index in waitingReasons of a waiting process's reason.
func waitingSeverity(h process.History) int {
	switch {
	case h.PortInUse != "":
		return 2
	case h.Failures >= process.CrashLoopFailures:
		return 1
	default:
		return 0
	}
}

// setCertificatesAvailableCondition sets CertificatesAvailable: True when the PKI exists and the
// <cluster>-ca and <cluster>-kubeconfig Secrets hold it.
func setCertificatesAvailableCondition(s *scope) {
	condition := metav1.Condition{Type: controlplanev1.CertificatesAvailableCondition, Status: metav1.ConditionFalse}
	reason, message, isBlocked := blocked(s)
	switch {
	case isBlocked:
		condition.Reason, condition.Message = reason, message
	case s.secretsErr != nil:
		condition.Reason = controlplanev1.CertificatesUnavailableReason
		condition.Message = s.secretsErr.Error()
	case s.secretsWritten:
		condition.Status = metav1.ConditionTrue
		condition.Reason = controlplanev1.CertificatesAvailableReason
		condition.Message = fmt.Sprintf("Secrets %s-ca and %s-kubeconfig hold the cluster CA and an admin kubeconfig", s.clusterName, s.clusterName)
	default:
		if conditions.Has(s.lcp, controlplanev1.CertificatesAvailableCondition) {
			return
		}
		condition.Reason = controlplanev1.StartingReason
		condition.Message = "Waiting for the control plane's PKI"
	}
	conditions.Set(s.lcp, condition)
}

// reasonOf returns the reason of a condition of lcp, "" when it has none.
func reasonOf(lcp *controlplanev1.LocalControlPlane, conditionType string) string {
	return conditions.GetReason(lcp, conditionType)
}
