package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Additional condition reasons of a LocalControlPlane.
const (
	// UnavailableReason: the API server was initialized and does not answer /readyz now; the
	// reconciler restarts dead processes and checks again.
	UnavailableReason = "Unavailable"
	// CertificatesUnavailableReason: the PKI or one of its Secrets could not be written; the
	// message says why.
	CertificatesUnavailableReason = "CertificatesUnavailable"
	// ClusterNameConflictReason: a LocalControlPlane of a Cluster with the same name in another
	// namespace already owns the data directory $FLOTILLA_HOME/clusters/<name>.
	ClusterNameConflictReason = "ClusterNameConflict"
	// ProcessRestartingReason: a process exited and waits a moment before the supervisor starts
	// it again; the message says how it ended and when it starts.
	ProcessRestartingReason = "ProcessRestarting"
	// CrashLoopBackOffReason: a process exited soon after its start several times in a row, and
	// the supervisor waits ever longer (up to a minute) before starting it again.
	CrashLoopBackOffReason = "CrashLoopBackOff"
	// PortInUseReason: a process cannot start because another program listens on its port; the
	// message names the address.
	PortInUseReason = "PortInUse"
)

// GetConditions returns the conditions of the LocalControlPlane (CAPI's conditions.Getter).
func (c *LocalControlPlane) GetConditions() []metav1.Condition {
	return c.Status.Conditions
}

// SetConditions sets the conditions of the LocalControlPlane (CAPI's conditions.Setter).
func (c *LocalControlPlane) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}
