package packetcluster

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/predicates"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/credentials"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetclusters;packetclusters/status,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,namespace=flotilla-system,resources=secrets,verbs=get
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetclusteridentities,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles a PacketCluster.
type Reconciler struct {
	// Client reads and writes objects in the management cluster.
	Client ctrlclient.Client
	// APIReader reads the credentials Secret without caching Secrets.
	APIReader ctrlclient.Reader
	// NewMetalClient builds the Metal API client; credentials.NewMetalClient in production.
	NewMetalClient credentials.NewClientFunc

	recorder events.EventRecorder
}

// SetupWithManager registers the reconciler with mgr. It watches PacketClusters, their
// Clusters (owner set, paused) and PacketClusterIdentities (an admin creating an identity, or
// changing the namespaces it allows, affects the PacketClusters that name it at once).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.APIReader == nil || r.NewMetalClient == nil {
		return errors.New("packetcluster reconciler: Client, APIReader and NewMetalClient must be set")
	}
	log := ctrl.LoggerFrom(ctx).WithValues("controller", "packetcluster")
	err := ctrl.NewControllerManagedBy(mgr).
		Named("packetcluster").
		For(&infrav1.PacketCluster{}).
		WithOptions(options).
		Watches(
			&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(util.ClusterToInfrastructureMapFunc(ctx, infrav1.GroupVersion.WithKind("PacketCluster"), mgr.GetClient(), &infrav1.PacketCluster{})),
			builder.WithPredicates(predicates.ClusterPausedTransitions(mgr.GetScheme(), log)),
		).
		Watches(&infrav1.PacketClusterIdentity{}, handler.EnqueueRequestsFromMapFunc(r.packetClustersUsing)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the packetcluster controller: %w", err)
	}
	r.recorder = mgr.GetEventRecorder("packetcluster-controller")
	return nil
}

// scope is what one reconcile learns.
type scope struct {
	packetCluster *infrav1.PacketCluster
	cluster       *clusterv1.Cluster
	// err is the Metal API or credentials error of this reconcile, reason its condition reason.
	err    error
	reason string
}

// Reconcile reserves or releases the elastic IP of one PacketCluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	pc := &infrav1.PacketCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, pc); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting PacketCluster: %w", err)
	}
	cluster, err := util.GetOwnerCluster(ctx, r.Client, pc.ObjectMeta)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("getting the owner Cluster: %w", err)
	}
	if cluster != nil {
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Cluster", klog.KObj(cluster)))
	}

	patch := objectpatch.New(r.Client, pc)
	if stop, res, err := objectpatch.Begin(ctx, patch, pc, infrav1.PacketClusterFinalizer, cluster); stop {
		return res, err
	}

	s := &scope{packetCluster: pc, cluster: cluster}
	defer func() {
		setStatus(s)
		// One write for the whole status: see package objectpatch.
		if err := patch.Write(ctx); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	if !pc.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return r.reconcileNormal(ctx, s)
}

// packetClustersUsing maps a PacketClusterIdentity to the PacketClusters that name it.
func (r *Reconciler) packetClustersUsing(ctx context.Context, identity ctrlclient.Object) []reconcile.Request {
	list := &infrav1.PacketClusterList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing PacketClusters to map an identity to", "identity", identity.GetName())
		return nil
	}
	var requests []reconcile.Request
	for i := range list.Items {
		if credentials.IdentityName(list.Items[i].Spec.IdentityRef) == identity.GetName() {
			requests = append(requests, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return requests
}

// endpointTag identifies the elastic IP of a PacketCluster.
func endpointTag(pc *infrav1.PacketCluster) string {
	return infrav1.PacketEndpointTagPrefix + pc.Namespace + "/" + pc.Name
}

// clusterTag is on everything of the cluster a PacketCluster belongs to.
func clusterTag(pc *infrav1.PacketCluster) string {
	return infrav1.PacketClusterTagPrefix + pc.Namespace + "/" + pc.Name
}

// unassignAll removes every assignment of an IP reservation.
func unassignAll(ctx context.Context, c metal.Interface, ip *metal.IPReservation) error {
	for _, a := range ip.Assignments {
		if err := c.UnassignIP(ctx, metal.AssignmentID(a)); err != nil {
			return fmt.Errorf("unassigning %s: %w", ip.Address, err)
		}
	}
	return nil
}
