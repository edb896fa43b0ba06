package packetcluster

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// setStatus turns what a reconcile learned into the PacketCluster's status: provisioned, failure
// domains and the Ready condition.
func setStatus(s *scope) {
	pc := s.packetCluster
	if pc.Spec.ControlPlaneEndpoint.Host != "" && pc.DeletionTimestamp.IsZero() && s.cluster != nil {
		pc.Status.Initialization.Provisioned = ptr.To(true)
		domain := pc.Spec.Metro
		attributes := map[string]string{"metro": pc.Spec.Metro}
		if pc.Spec.Facility != "" {
			domain = pc.Spec.Facility
			attributes["facility"] = pc.Spec.Facility
		}
		pc.Status.FailureDomains = []infrav1.PacketFailureDomain{{Name: domain, ControlPlane: ptr.To(true), Attributes: attributes}}
	}
	conditions.Set(pc, readyCondition(s))
}

// readyCondition is True once the control plane endpoint is known.
func readyCondition(s *scope) metav1.Condition {
	pc := s.packetCluster
	c := metav1.Condition{Type: infrav1.ReadyCondition, Status: metav1.ConditionFalse}
	switch {
	case !pc.DeletionTimestamp.IsZero():
		c.Reason = infrav1.DeletingReason
		c.Message = "Releasing the control plane elastic IP"
		if s.err != nil {
			c.Reason, c.Message = s.reason, s.err.Error()
		}
	case s.err != nil:
		c.Reason, c.Message = s.reason, s.err.Error()
	case s.cluster == nil:
		c.Reason = infrav1.WaitingForClusterReason
		c.Message = "Waiting for a CAPI Cluster to own this PacketCluster"
	case pc.Spec.ControlPlaneEndpoint.Host != "":
		c.Status = metav1.ConditionTrue
		c.Reason = infrav1.ProvisionedReason
		c.Message = fmt.Sprintf("Control plane endpoint %s:%d", pc.Spec.ControlPlaneEndpoint.Host, pc.Spec.ControlPlaneEndpoint.Port)
	default:
		c.Reason = infrav1.WaitingForInfrastructureReason
		c.Message = "Reserving the control plane elastic IP"
	}
	return c
}
