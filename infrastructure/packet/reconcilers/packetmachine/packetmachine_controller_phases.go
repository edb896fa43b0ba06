package packetmachine

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/cluster-api/util"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/apierror"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/credentials"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

// Poll intervals while a device provisions: a quarter of its age, between these bounds, so a
// fast device is seen early and a slow one costs few calls (see nextPoll).
const (
	minPoll = 2 * time.Second
	maxPoll = 30 * time.Second
)

// reconcileNormal creates the device once everything it needs exists, and follows it until it
// is active.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	pm := s.packetMachine
	if !readyToCreate(s) {
		return ctrl.Result{}, nil // the Machine and Cluster watches bring the next reconcile
	}
	if ptr.Deref(pm.Status.Initialization.Provisioned, false) || pm.Status.InstanceState == metal.DeviceStateFailed {
		return ctrl.Result{}, nil // settled: no API calls at steady state
	}
	c, err := credentials.ClientFor(ctx, r.APIReader, r.NewMetalClient, s.packetCluster)
	if err != nil {
		return r.failed(s, "CreateDevice", err)
	}

	if id, ok := deviceID(pm); ok {
		s.device, err = c.GetDevice(ctx, id)
		if metal.IsNotFound(err) {
			s.reason, s.err = infrav1.DeviceNotFoundReason, fmt.Errorf("device %s no longer exists in the Metal API; the Machine must be replaced", id)
			r.recorder.Eventf(pm, nil, corev1.EventTypeWarning, infrav1.DeviceNotFoundReason, "GetDevice", "%v", s.err)
			return ctrl.Result{}, nil
		}
		if err != nil {
			return r.failed(s, "GetDevice", err)
		}
	} else {
		userdata, err := r.bootstrapData(ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		device, created, err := c.EnsureDevice(ctx, s.packetCluster.Spec.ProjectID, machineTag(pm), deviceRequest(s, userdata))
		if err != nil {
			return r.failed(s, "CreateDevice", err)
		}
		s.device = device
		pm.Spec.ProviderID = infrav1.PacketProviderIDPrefix + device.ID
		if created {
			r.recorder.Eventf(pm, nil, corev1.EventTypeNormal, "DeviceCreated", "CreateDevice", "Created device %s (%s)", device.ID, device.Hostname)
		}
	}

	switch s.device.State {
	case metal.DeviceStateActive:
		if util.IsControlPlaneMachine(s.machine) {
			if err := r.ensureElasticIP(ctx, c, s); err != nil {
				return r.failed(s, "AssignIP", err)
			}
		}
		r.recorder.Eventf(pm, nil, corev1.EventTypeNormal, "DeviceActive", "GetDevice", "Device %s is active", s.device.ID)
		return ctrl.Result{}, nil
	case metal.DeviceStateFailed:
		r.recorder.Eventf(pm, nil, corev1.EventTypeWarning, infrav1.DeviceFailedReason, "GetDevice", "Device %s failed to provision", s.device.ID)
		return ctrl.Result{}, nil
	default:
		return ctrl.Result{RequeueAfter: nextPoll(time.Since(s.device.CreatedAt))}, nil
	}
}

// readyToCreate reports whether the device can be created: the Machine, its Cluster with
// provisioned infrastructure, the PacketCluster, and bootstrap data exist.
func readyToCreate(s *scope) bool {
	return s.machine != nil && s.cluster != nil && s.packetCluster != nil &&
		ptr.Deref(s.cluster.Status.Initialization.InfrastructureProvisioned, false) &&
		s.machine.Spec.Bootstrap.DataSecretName != nil
}

// nextPoll is the wait before looking at a device of the given age again. The looks fall at
// fixed ages of the device: the first at minPoll, each next one a quarter of the age later
// (between minPoll and maxPoll), so 2, 4, 6, 8, 10, 12.5 s and so on. Fixed ages, rather than a
// wait counted from the last look, because the reconciler also runs on the Machine's and the
// PacketMachine's own changes, several while a device provisions, and the workqueue keeps one
// pending run per object: a wait counted from such a run would move the next look later each
// time, by up to minPoll (seen as a device found active a second or more after it was).
func nextPoll(age time.Duration) time.Duration {
	age = max(age, 0) // a device created "in the future" by a skewed clock is looked at soon
	at := minPoll
	for at <= age {
		step := min(max(at/4, minPoll), maxPoll)
		if step == maxPoll { // from here on every step is maxPoll
			at += ((age-at)/maxPoll + 1) * maxPoll
			break
		}
		at += step
	}
	return at - age
}

// bootstrapData reads the Machine's bootstrap data Secret: the cloud-init the device runs.
func (r *Reconciler) bootstrapData(ctx context.Context, s *scope) (string, error) {
	name := *s.machine.Spec.Bootstrap.DataSecretName
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, ctrlclient.ObjectKey{Namespace: s.machine.Namespace, Name: name}, secret); err != nil {
		return "", fmt.Errorf("reading bootstrap data Secret %s: %w", name, err)
	}
	data, ok := secret.Data["value"]
	if !ok {
		return "", reconcile.TerminalError(fmt.Errorf("bootstrap data Secret %s has no \"value\"", name))
	}
	return string(data), nil
}

// machineTag identifies the device of a PacketMachine.
func machineTag(pm *infrav1.PacketMachine) string {
	return infrav1.PacketMachineTagPrefix + pm.Namespace + "/" + pm.Name
}

// clusterTag is on every device of the cluster.
func clusterTag(pc *infrav1.PacketCluster) string {
	return infrav1.PacketClusterTagPrefix + pc.Namespace + "/" + pc.Name
}

// deviceID returns the device ID in spec.providerID.
func deviceID(pm *infrav1.PacketMachine) (string, bool) {
	id, ok := strings.CutPrefix(pm.Spec.ProviderID, infrav1.PacketProviderIDPrefix)
	return id, ok && id != ""
}

// deviceRequest builds the create request of a machine's device: where (the PacketCluster's
// metro or facility), what (the PacketMachine's plan, OS, billing), the bootstrap data as
// userdata, and the tags that say whose it is.
func deviceRequest(s *scope, userdata string) metal.DeviceCreateRequest {
	pm, pc := s.packetMachine, s.packetCluster
	tags := []string{clusterTag(pc)}
	if util.IsControlPlaneMachine(s.machine) {
		tags = append(tags, infrav1.PacketControlPlaneTag)
	}
	tags = append(tags, pm.Spec.Tags...)
	req := metal.DeviceCreateRequest{
		Hostname:              pm.Name,
		Plan:                  pm.Spec.Plan,
		OperatingSystem:       pm.Spec.OS,
		BillingCycle:          pm.Spec.BillingCycle,
		Userdata:              userdata,
		Tags:                  tags,
		ProjectSSHKeys:        pm.Spec.SSHKeys,
		HardwareReservationID: pm.Spec.HardwareReservationID,
	}
	if pc.Spec.Facility != "" {
		req.Facility = []string{pc.Spec.Facility}
	} else {
		req.Metro = pc.Spec.Metro
	}
	return req
}

// ensureElasticIP assigns the cluster's elastic IP to a control plane device when no device
// holds it yet: the first control plane machine gets it, and the VIP manager moves it later.
func (r *Reconciler) ensureElasticIP(ctx context.Context, c metal.Interface, s *scope) error {
	eip := s.packetCluster.Status.ElasticIP
	if eip == nil {
		return nil // a user-given endpoint: nothing to assign
	}
	for _, a := range s.device.IPAddresses {
		if a.Address == eip.Address {
			return nil
		}
	}
	reservation, err := c.GetIPReservation(ctx, eip.ID)
	if err != nil {
		return err
	}
	if len(reservation.Assignments) > 0 {
		return nil
	}
	assigned, err := c.AssignIP(ctx, s.device.ID, eip.Address+"/32")
	if err != nil {
		return err
	}
	s.device.IPAddresses = append(s.device.IPAddresses, *assigned)
	r.recorder.Eventf(s.packetMachine, nil, corev1.EventTypeNormal, "ElasticIPAssigned", "AssignIP",
		"Assigned the control plane endpoint %s to device %s", eip.Address, s.device.ID)
	return nil
}

// reconcileDelete deletes the machine's device: the one in providerID and any carrying its tag
// (created by a reconcile that crashed before recording it).
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	pm := s.packetMachine
	id, hasID := deviceID(pm)
	if s.packetCluster == nil {
		if hasID {
			r.recorder.Eventf(pm, nil, corev1.EventTypeWarning, "DeviceOrphaned", "DeleteDevice",
				"The PacketCluster is gone, so device %s cannot be deleted from here; delete it in the Metal API", id)
		}
		controllerutil.RemoveFinalizer(pm, infrav1.PacketMachineFinalizer)
		return ctrl.Result{}, nil
	}
	c, err := credentials.ClientFor(ctx, r.APIReader, r.NewMetalClient, s.packetCluster)
	if err != nil {
		return r.failed(s, "DeleteDevice", err)
	}
	ids := map[string]bool{}
	if hasID {
		ids[id] = true
	}
	tagged, err := c.ListDevices(ctx, s.packetCluster.Spec.ProjectID, machineTag(pm))
	if err != nil {
		return r.failed(s, "DeleteDevice", err)
	}
	for _, d := range tagged {
		ids[d.ID] = true
	}
	for id := range ids {
		if err := c.DeleteDevice(ctx, id); err != nil {
			return r.failed(s, "DeleteDevice", err)
		}
		r.recorder.Eventf(pm, nil, corev1.EventTypeNormal, "DeviceDeleted", "DeleteDevice", "Deleted device %s", id)
	}
	controllerutil.RemoveFinalizer(pm, infrav1.PacketMachineFinalizer)
	return ctrl.Result{}, nil
}

// failed records a Metal API or credentials error and decides how to come back.
func (r *Reconciler) failed(s *scope, action string, err error) (ctrl.Result, error) {
	outcome := apierror.Classify(err)
	s.err, s.reason = err, outcome.Reason
	r.recorder.Eventf(s.packetMachine, nil, corev1.EventTypeWarning, outcome.Reason, action, "%v", err)
	return outcome.Result(err)
}
