package packetmachine

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

// setStatus turns what a reconcile learned into the PacketMachine's status: instance state,
// provisioned, addresses, failure domain and the Ready condition.
func setStatus(s *scope) {
	pm := s.packetMachine
	if d := s.device; d != nil && pm.DeletionTimestamp.IsZero() {
		pm.Status.InstanceState = d.State
		if d.State == metal.DeviceStateActive {
			pm.Status.Initialization.Provisioned = ptr.To(true)
			pm.Status.Addresses = addresses(d)
			if d.Facility != nil {
				pm.Status.FailureDomain = d.Facility.Code
			} else if d.Metro != nil {
				pm.Status.FailureDomain = d.Metro.Code
			}
		}
	}
	conditions.Set(pm, readyCondition(s))
}

// addresses returns the machine addresses of a device: its hostname, then public addresses as
// ExternalIP and private ones as InternalIP.
func addresses(d *metal.Device) []infrav1.MachineAddress {
	out := []infrav1.MachineAddress{{Type: "Hostname", Address: d.Hostname}}
	for _, public := range []bool{true, false} {
		for _, a := range d.IPAddresses {
			if a.Public != public || a.AddressFamily != 4 {
				continue
			}
			kind := "InternalIP"
			if a.Public {
				kind = "ExternalIP"
			}
			out = append(out, infrav1.MachineAddress{Type: kind, Address: a.Address})
		}
	}
	return out
}

// readyCondition is True once the device is active; CAPI mirrors it into the Machine's
// InfrastructureReady.
func readyCondition(s *scope) metav1.Condition {
	pm := s.packetMachine
	c := metav1.Condition{Type: infrav1.ReadyCondition, Status: metav1.ConditionFalse}
	id, _ := deviceID(pm)
	switch {
	case !pm.DeletionTimestamp.IsZero():
		c.Reason, c.Message = infrav1.DeletingReason, "Deleting the device"
		if s.err != nil {
			c.Reason, c.Message = s.reason, s.err.Error()
		}
	case s.err != nil:
		c.Reason, c.Message = s.reason, s.err.Error()
	case pm.Status.InstanceState == metal.DeviceStateFailed:
		c.Reason = infrav1.DeviceFailedReason
		c.Message = fmt.Sprintf("Device %s failed to provision; the Machine must be replaced", id)
	case ptr.Deref(pm.Status.Initialization.Provisioned, false):
		c.Status = metav1.ConditionTrue
		c.Reason = infrav1.ProvisionedReason
		c.Message = fmt.Sprintf("Device %s is active", id)
	case s.machine == nil:
		c.Reason, c.Message = infrav1.WaitingForMachineReason, "Waiting for a CAPI Machine to own this PacketMachine"
	case s.cluster == nil:
		c.Reason, c.Message = infrav1.WaitingForClusterReason, fmt.Sprintf("Waiting for Cluster %s", s.machine.Spec.ClusterName)
	case s.packetCluster == nil || !ptr.Deref(s.cluster.Status.Initialization.InfrastructureProvisioned, false):
		c.Reason, c.Message = infrav1.WaitingForInfrastructureReason, "Waiting for the PacketCluster to reserve the control plane endpoint"
	case s.machine.Spec.Bootstrap.DataSecretName == nil:
		c.Reason, c.Message = infrav1.WaitingForBootstrapDataReason, "Waiting for the bootstrap provider to write the bootstrap data Secret"
	case pm.Status.InstanceState != "":
		c.Reason, c.Message = infrav1.DeviceProvisioningReason, fmt.Sprintf("Device %s is %s", id, pm.Status.InstanceState)
	default:
		c.Reason, c.Message = infrav1.DeviceProvisioningReason, "Creating the device"
	}
	return c
}
