package localmachine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/predicates"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// Requeue intervals. Node events arrive through a watch; these are the safety nets.
const (
	// notConnectedRequeue is how long to wait while ClusterCache has no connection to the
	// workload cluster. Its connect event usually comes first.
	notConnectedRequeue = 5 * time.Second
	// nodeNotReadyRequeue is how long to wait for kwok to mark a new Node Ready.
	nodeNotReadyRequeue = 10 * time.Second
)

// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=localmachines;localmachines/status,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status;machines;machines/status,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=controlplane.flotilla.dev,resources=localcontrolplanes,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,namespace=flotilla-system,resources=configmaps,resourceNames=registry-mirror,verbs=get

// Reconciler reconciles a LocalMachine.
type Reconciler struct {
	// Client reads and writes objects in the management cluster.
	Client ctrlclient.Client
	// APIReader reads the management cluster's registry mirror and its credentials
	// (realnode.MirrorOf) without a cache of ConfigMaps.
	APIReader ctrlclient.Reader
	// ClusterCache gives clients for workload clusters, where the Nodes live.
	ClusterCache clustercache.ClusterCache
	// Home is $FLOTILLA_HOME: real nodes keep their data in
	// Home/clusters/<cluster>/nodes/<machine> (package realnode).
	Home string
	// BinRoot is the binary cache, with the node programs of each version real nodes run.
	BinRoot string

	controller controller.Controller
	recorder   events.EventRecorder
}

// SetupWithManager registers the reconciler with mgr. It watches LocalMachines, the Machines
// that own them, their Clusters (control plane initialized, paused), ClusterCache connects and
// disconnects, and — once connected — the Nodes of every workload cluster.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.APIReader == nil || r.ClusterCache == nil || r.Home == "" || r.BinRoot == "" {
		return errors.New("localmachine reconciler: Client, APIReader, ClusterCache, Home and BinRoot must be set")
	}
	log := ctrl.LoggerFrom(ctx).WithValues("controller", "localmachine")
	clusterToLocalMachines, err := util.ClusterToTypedObjectsMapper(mgr.GetClient(), &infrav1.LocalMachineList{}, mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("setting up the localmachine controller: %w", err)
	}
	c, err := ctrl.NewControllerManagedBy(mgr).
		Named("localmachine").
		For(&infrav1.LocalMachine{}).
		WithOptions(options).
		Watches(
			&clusterv1.Machine{},
			handler.EnqueueRequestsFromMapFunc(util.MachineToInfrastructureMapFunc(infrav1.GroupVersion.WithKind("LocalMachine"))),
		).
		Watches(
			&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(clusterToLocalMachines),
			builder.WithPredicates(predicates.Any(mgr.GetScheme(), log,
				predicates.ClusterPausedTransitions(mgr.GetScheme(), log),
				predicates.ClusterControlPlaneInitialized(mgr.GetScheme(), log),
			)),
		).
		WatchesRawSource(r.ClusterCache.GetClusterSource("localmachine", clusterToLocalMachines)).
		Build(r)
	if err != nil {
		return fmt.Errorf("setting up the localmachine controller: %w", err)
	}
	r.controller = c
	r.recorder = mgr.GetEventRecorder("localmachine-controller")
	return nil
}

// Reconcile creates, observes or deletes the Node of one LocalMachine: simulated, or real.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	localMachine := &infrav1.LocalMachine{}
	if err := r.Client.Get(ctx, req.NamespacedName, localMachine); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting LocalMachine: %w", err)
	}

	machine, err := util.GetOwnerMachine(ctx, r.Client, localMachine.ObjectMeta)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("getting the owner Machine: %w", err)
	}
	var cluster *clusterv1.Cluster
	if machine != nil {
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Machine", klog.KObj(machine)))
		cluster, err = util.GetClusterFromMetadata(ctx, r.Client, machine.ObjectMeta)
		if err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("getting the Cluster of Machine %s: %w", machine.Name, err)
		}
	}
	if cluster != nil {
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Cluster", klog.KObj(cluster)))
	}

	// Add the finalizer first to avoid racing a delete against creating the Node.
	patch := objectpatch.New(r.Client, localMachine)
	if stop, res, err := objectpatch.Begin(ctx, patch, localMachine, infrav1.LocalMachineFinalizer, cluster); stop {
		return res, err
	}

	s := &scope{localMachine: localMachine, machine: machine, cluster: cluster}
	defer func() {
		setStatus(s)
		// One write for the whole status: see package objectpatch.
		if err := patch.Write(ctx); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	if !localMachine.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	return r.reconcileNormal(ctx, s)
}

// watchNodes makes sure Node events of the cluster's workload cluster reach this controller.
// ClusterCache adds a watch once per connection, whatever the number of calls.
func (r *Reconciler) watchNodes(ctx context.Context, cluster *clusterv1.Cluster) error {
	return r.ClusterCache.Watch(ctx, util.ObjectKey(cluster), clustercache.NewWatcher(clustercache.WatcherOptions{
		Name:         "localmachine-watchNodes",
		Watcher:      r.controller,
		Kind:         &corev1.Node{},
		EventHandler: handler.EnqueueRequestsFromMapFunc(nodeToLocalMachine),
		Predicates:   []predicate.TypedPredicate[ctrlclient.Object]{nodeReadyChanged()},
	}))
}

// nodeToLocalMachine maps a simulated Node to the LocalMachine named in its
// infrav1.MachineNameAnnotation. Nodes the provider did not create map to nothing.
func nodeToLocalMachine(_ context.Context, o ctrlclient.Object) []reconcile.Request {
	namespace, name, ok := strings.Cut(o.GetAnnotations()[infrav1.MachineNameAnnotation], "/")
	if !ok || namespace == "" || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ctrlclient.ObjectKey{Namespace: namespace, Name: name}}}
}

// nodeReadyChanged lets through Node creations, deletions and updates that change the status of
// the Ready condition, and drops kwok's heartbeats.
func nodeReadyChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldNode, okOld := e.ObjectOld.(*corev1.Node)
			newNode, okNew := e.ObjectNew.(*corev1.Node)
			if !okOld || !okNew {
				return false
			}
			return readyStatus(oldNode) != readyStatus(newNode)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// readyStatus returns the status of the Node's Ready condition, "" when it has none.
func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	if ready := nodeReady(node); ready != nil {
		return ready.Status
	}
	return ""
}

// removeFinalizer lets the LocalMachine go.
func removeFinalizer(s *scope) {
	controllerutil.RemoveFinalizer(s.localMachine, infrav1.LocalMachineFinalizer)
}
