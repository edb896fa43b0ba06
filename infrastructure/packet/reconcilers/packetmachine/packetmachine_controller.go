package packetmachine

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

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/predicates"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/credentials"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetmachines;packetmachines/status,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status;machines;machines/status,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetclusteridentities,verbs=get
// +kubebuilder:rbac:groups=core,resources=namespaces,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles a PacketMachine.
type Reconciler struct {
	// Client reads and writes objects in the management cluster.
	Client ctrlclient.Client
	// APIReader reads Secrets (credentials, bootstrap data) without caching Secrets.
	APIReader ctrlclient.Reader
	// NewMetalClient builds the Metal API client; credentials.NewMetalClient in production.
	NewMetalClient credentials.NewClientFunc

	recorder events.EventRecorder
}

// SetupWithManager registers the reconciler with mgr. It watches PacketMachines, the Machines
// that own them (bootstrap data appearing) and their Clusters (infrastructure provisioned,
// paused).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.APIReader == nil || r.NewMetalClient == nil {
		return errors.New("packetmachine reconciler: Client, APIReader and NewMetalClient must be set")
	}
	log := ctrl.LoggerFrom(ctx).WithValues("controller", "packetmachine")
	clusterToPacketMachines, err := util.ClusterToTypedObjectsMapper(mgr.GetClient(), &infrav1.PacketMachineList{}, mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("setting up the packetmachine controller: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("packetmachine").
		For(&infrav1.PacketMachine{}).
		WithOptions(options).
		Watches(
			&clusterv1.Machine{},
			handler.EnqueueRequestsFromMapFunc(util.MachineToInfrastructureMapFunc(infrav1.GroupVersion.WithKind("PacketMachine"))),
		).
		Watches(
			&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(clusterToPacketMachines),
			builder.WithPredicates(predicates.ClusterPausedTransitionsOrInfrastructureProvisioned(mgr.GetScheme(), log)),
		).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the packetmachine controller: %w", err)
	}
	r.recorder = mgr.GetEventRecorder("packetmachine-controller")
	return nil
}

// scope is what one reconcile learns.
type scope struct {
	packetMachine *infrav1.PacketMachine
	machine       *clusterv1.Machine
	cluster       *clusterv1.Cluster
	packetCluster *infrav1.PacketCluster
	// device is the machine's device as the API last showed it.
	device *metal.Device
	// err is the Metal API or credentials error of this reconcile, reason its condition reason.
	err    error
	reason string
}

// Reconcile creates, observes or deletes the device of one PacketMachine.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	pm := &infrav1.PacketMachine{}
	if err := r.Client.Get(ctx, req.NamespacedName, pm); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting PacketMachine: %w", err)
	}
	s := &scope{packetMachine: pm}
	if err := r.readOwners(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.machine != nil {
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KObj(s.machine)))
	}

	patch := objectpatch.New(r.Client, pm)
	if stop, res, err := objectpatch.Begin(ctx, patch, pm, infrav1.PacketMachineFinalizer, s.cluster); stop {
		return res, err
	}
	defer func() {
		setStatus(s)
		// One write for the whole status: see package objectpatch.
		if err := patch.Write(ctx); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	if !pm.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return r.reconcileNormal(ctx, s)
}

// readOwners finds the owner Machine, its Cluster and the Cluster's PacketCluster; each is nil
// while it does not exist.
func (r *Reconciler) readOwners(ctx context.Context, s *scope) error {
	pm := s.packetMachine
	machine, err := util.GetOwnerMachine(ctx, r.Client, pm.ObjectMeta)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("getting the owner Machine: %w", err)
	}
	s.machine = machine
	if machine == nil {
		return nil
	}
	cluster, err := util.GetClusterFromMetadata(ctx, r.Client, machine.ObjectMeta)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("getting the Cluster of Machine %s: %w", machine.Name, err)
	}
	s.cluster = cluster
	if cluster == nil || cluster.Spec.InfrastructureRef.Name == "" {
		return nil
	}
	pc := &infrav1.PacketCluster{}
	err = r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: cluster.Namespace, Name: cluster.Spec.InfrastructureRef.Name}, pc)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("getting the PacketCluster of Cluster %s: %w", cluster.Name, err)
	}
	s.packetCluster = pc
	return nil
}
