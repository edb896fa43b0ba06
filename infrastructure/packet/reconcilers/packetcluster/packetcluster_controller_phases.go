package packetcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/apierror"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/credentials"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

// APIServerPort is the port of the control plane endpoint.
const APIServerPort = 6443

// reconcileNormal reserves the elastic IP (or finds the one reserved before) and records it as
// the control plane endpoint.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	pc := s.packetCluster
	if s.cluster == nil {
		return ctrl.Result{}, nil // waiting for CAPI to set the owner; the Cluster watch brings it back
	}
	if pc.Spec.ControlPlaneEndpoint.Host != "" && pc.Status.ElasticIP != nil {
		return ctrl.Result{}, nil // nothing left to do; no API call at steady state
	}
	c, err := credentials.ClientFor(ctx, r.APIReader, r.NewMetalClient, pc)
	if err != nil {
		return r.failed(s, "ReserveIP", err)
	}

	var ip *metal.IPReservation
	if pc.Spec.ControlPlaneEndpoint.Host != "" {
		// A user-given endpoint is used as is; an earlier reconcile may also have set it and
		// failed to record the reservation, so look for one.
		found, err := c.ListIPReservations(ctx, pc.Spec.ProjectID, endpointTag(pc))
		if err != nil {
			return r.failed(s, "ReserveIP", err)
		}
		if len(found) == 0 {
			return ctrl.Result{}, nil
		}
		ip = &found[0]
	} else {
		ip, err = c.EnsureIPReservation(ctx, pc.Spec.ProjectID, endpointTag(pc), metal.IPReservationRequest{
			Type:     metal.IPTypePublicIPv4,
			Quantity: 1,
			Metro:    pc.Spec.Metro,
			Tags:     []string{clusterTag(pc)},
			Details:  fmt.Sprintf("Control plane endpoint of cluster %s/%s (flotilla)", pc.Namespace, pc.Name),
		})
		if err != nil {
			return r.failed(s, "ReserveIP", err)
		}
		r.recorder.Eventf(pc, nil, corev1.EventTypeNormal, "ElasticIPReserved", "ReserveIP",
			"Reserved %s as the control plane endpoint", ip.Address)
	}
	pc.Status.ElasticIP = &infrav1.PacketElasticIP{ID: ip.ID, Address: ip.Address}
	if pc.Spec.ControlPlaneEndpoint.Host == "" {
		pc.Spec.ControlPlaneEndpoint = infrav1.APIEndpoint{Host: ip.Address, Port: APIServerPort}
	}
	return ctrl.Result{}, nil
}

// reconcileDelete releases the elastic IPs the cluster reserved: the recorded one and any other
// carrying its tag (one reserved by a reconcile that crashed before recording it).
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	pc := s.packetCluster
	c, err := credentials.ClientFor(ctx, r.APIReader, r.NewMetalClient, pc)
	if err != nil {
		return r.failed(s, "ReleaseIP", err)
	}
	reservations, err := c.ListIPReservations(ctx, pc.Spec.ProjectID, endpointTag(pc))
	if err != nil {
		return r.failed(s, "ReleaseIP", err)
	}
	if recorded := pc.Status.ElasticIP; recorded != nil && !containsID(reservations, recorded.ID) {
		ip, err := c.GetIPReservation(ctx, recorded.ID)
		if err != nil && !metal.IsNotFound(err) {
			return r.failed(s, "ReleaseIP", err)
		}
		if err == nil {
			reservations = append(reservations, *ip)
		}
	}
	for i := range reservations {
		ip := &reservations[i]
		if err := unassignAll(ctx, c, ip); err != nil {
			return r.failed(s, "ReleaseIP", err)
		}
		if err := c.DeleteIPReservation(ctx, ip.ID); err != nil {
			return r.failed(s, "ReleaseIP", err)
		}
		r.recorder.Eventf(pc, nil, corev1.EventTypeNormal, "ElasticIPReleased", "ReleaseIP", "Released %s", ip.Address)
	}
	pc.Status.ElasticIP = nil
	controllerutil.RemoveFinalizer(pc, infrav1.PacketClusterFinalizer)
	return ctrl.Result{}, nil
}

// failed records a Metal API or credentials error and decides how to come back.
func (r *Reconciler) failed(s *scope, action string, err error) (ctrl.Result, error) {
	outcome := apierror.Classify(err)
	s.err, s.reason = err, outcome.Reason
	r.recorder.Eventf(s.packetCluster, nil, corev1.EventTypeWarning, outcome.Reason, action, "%v", err)
	return outcome.Result(err)
}

func containsID(reservations []metal.IPReservation, id string) bool {
	for _, r := range reservations {
		if r.ID == id {
			return true
		}
	}
	return false
}
