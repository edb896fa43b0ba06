package localcluster

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/paused"
	"sigs.k8s.io/cluster-api/util/predicates"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=localclusters;localclusters/status,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status,verbs=get;list;watch
// +kubebuilder:rbac:groups=controlplane.flotilla.dev,resources=localcontrolplanes,verbs=get;list;watch

// Reconciler reconciles a LocalCluster.
type Reconciler struct {
	// Client reads and writes objects in the management cluster.
	Client ctrlclient.Client
}

// SetupWithManager registers the reconciler with mgr. It watches LocalClusters, the CAPI
// Clusters that reference them (a Cluster whose control plane becomes initialized, or that is
// paused or unpaused) and the Clusters' LocalControlPlanes (one that becomes initialized).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		return errors.New("localcluster reconciler: Client must be set")
	}
	log := ctrl.LoggerFrom(ctx).WithValues("controller", "localcluster")
	err := ctrl.NewControllerManagedBy(mgr).
		Named("localcluster").
		For(&infrav1.LocalCluster{}).
		WithOptions(options).
		Watches(
			&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(util.ClusterToInfrastructureMapFunc(ctx,
				infrav1.GroupVersion.WithKind("LocalCluster"), mgr.GetClient(), &infrav1.LocalCluster{})),
			builder.WithPredicates(predicates.Any(mgr.GetScheme(), log,
				predicates.ClusterPausedTransitions(mgr.GetScheme(), log),
				predicates.ClusterControlPlaneInitialized(mgr.GetScheme(), log),
			)),
		).
		Watches(
			&controlplanev1.LocalControlPlane{},
			handler.EnqueueRequestsFromMapFunc(r.controlPlaneToLocalCluster),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc: func(e event.CreateEvent) bool { return controlPlaneInitialized(e.Object) },
				UpdateFunc: func(e event.UpdateEvent) bool {
					return !controlPlaneInitialized(e.ObjectOld) && controlPlaneInitialized(e.ObjectNew)
				},
				DeleteFunc:  func(event.DeleteEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
			}),
		).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the localcluster controller: %w", err)
	}
	return nil
}

// Reconcile brings one LocalCluster's status in line with its Cluster.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	localCluster := &infrav1.LocalCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, localCluster); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting LocalCluster: %w", err)
	}
	// Nothing to clean up: a LocalCluster carries no finalizer and creates nothing.
	if !localCluster.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	cluster, err := util.GetOwnerCluster(ctx, r.Client, localCluster.ObjectMeta)
	if err != nil && !apierrors.IsNotFound(err) {
		return ctrl.Result{}, fmt.Errorf("getting the owner Cluster: %w", err)
	}

	patch := objectpatch.New(r.Client, localCluster)
	if cluster != nil {
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Cluster", cluster.Name))
		if isPaused, requeue, err := paused.EnsurePausedCondition(ctx, r.Client, cluster, localCluster); err != nil || isPaused || requeue {
			return ctrl.Result{}, err
		}
	}

	var controlPlane *controlplanev1.LocalControlPlane
	if cluster != nil {
		if controlPlane, err = r.localControlPlane(ctx, cluster); err != nil {
			return ctrl.Result{}, err
		}
	}

	defer func() {
		setStatus(localCluster, cluster, controlPlane)
		// One write for the whole status: see package objectpatch.
		if err := patch.Write(ctx); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()
	return ctrl.Result{}, nil
}

// localControlPlane returns the LocalControlPlane cluster.spec.controlPlaneRef names; nil when
// the control plane is of another kind or does not exist yet.
func (r *Reconciler) localControlPlane(ctx context.Context, cluster *clusterv1.Cluster) (*controlplanev1.LocalControlPlane, error) {
	ref := cluster.Spec.ControlPlaneRef
	if ref.APIGroup != controlplanev1.GroupVersion.Group || ref.Kind != "LocalControlPlane" {
		return nil, nil
	}
	controlPlane := &controlplanev1.LocalControlPlane{}
	if err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}, controlPlane); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting LocalControlPlane %s: %w", ref.Name, err)
	}
	return controlPlane, nil
}

// controlPlaneToLocalCluster maps a LocalControlPlane to the LocalCluster of its Cluster (by
// CAPI's cluster-name label).
func (r *Reconciler) controlPlaneToLocalCluster(ctx context.Context, obj ctrlclient.Object) []ctrl.Request {
	name := obj.GetLabels()[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil
	}
	cluster := &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: obj.GetNamespace(), Name: name}, cluster); err != nil {
		return nil
	}
	ref := cluster.Spec.InfrastructureRef
	if ref.APIGroup != infrav1.GroupVersion.Group || ref.Kind != "LocalCluster" {
		return nil
	}
	return []ctrl.Request{{NamespacedName: ctrlclient.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}}}
}
