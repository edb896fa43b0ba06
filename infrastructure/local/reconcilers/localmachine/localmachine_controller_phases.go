package localmachine

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// unreachableDeleteTimeout bounds how long deleting a LocalMachine waits for an unreachable
// workload cluster before it gives up on the Node.
const unreachableDeleteTimeout = 5 * time.Minute

// scope holds what one reconcile learns about a LocalMachine; the status setters turn it into
// status fields and conditions.
type scope struct {
	localMachine *infrav1.LocalMachine
	// machine owns the LocalMachine; nil until CAPI sets the owner reference.
	machine *clusterv1.Machine
	// cluster is the Machine's Cluster; nil when it cannot be found.
	cluster *clusterv1.Cluster
	// node is the Node, once created (simulated) or registered (real) and found.
	node *corev1.Node
	// real is what the reconcile learned about a real node; nil for a simulated one.
	real *realNodeFacts
	// notConnected is true when ClusterCache has no connection to the workload cluster.
	notConnected bool
	// nodeErr is why the Node could not be created or read.
	nodeErr error
}

// controlPlaneInitialized reports whether the Cluster's control plane has served requests. CAPI
// patches the ControlPlaneInitialized condition and status.initialization in two requests, the
// condition first; either one counts, so that the event of the first is not missed.
func (s *scope) controlPlaneInitialized() bool {
	return s.cluster != nil && (ptr.Deref(s.cluster.Status.Initialization.ControlPlaneInitialized, false) ||
		conditions.IsTrue(s.cluster, clusterv1.ClusterControlPlaneInitializedCondition))
}

// reconcileNormal sets the provider ID and makes sure the simulated Node exists.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if s.machine == nil {
		log.V(4).Info("Waiting for the Machine controller to set the owner reference")
		return ctrl.Result{}, nil
	}
	if s.cluster == nil {
		log.V(4).Info("Waiting for the Machine's Cluster")
		return ctrl.Result{}, nil
	}
	s.localMachine.Spec.ProviderID = ProviderID(s.machine)

	if !s.controlPlaneInitialized() {
		log.V(4).Info("Waiting for the control plane to be initialized")
		return ctrl.Result{}, nil
	}
	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(s.cluster))
	if err == nil {
		err = r.watchNodes(ctx, s.cluster)
	}
	if errors.Is(err, clustercache.ErrClusterNotConnected) {
		log.V(4).Info("Waiting for the connection to the workload cluster")
		s.notConnected = true
		return ctrl.Result{RequeueAfter: notConnectedRequeue}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting a client for the workload cluster: %w", err)
	}
	if s.localMachine.Spec.Node == infrav1.RealNode {
		return r.reconcileRealNode(ctx, remote, s)
	}

	if err := r.ensureNode(ctx, remote, s); err != nil {
		return ctrl.Result{}, err
	}
	if s.node == nil || readyStatus(s.node) != corev1.ConditionTrue {
		return ctrl.Result{RequeueAfter: nodeNotReadyRequeue}, nil
	}
	return ctrl.Result{}, nil
}

// ensureNode creates the simulated Node when it is missing and adds labels and annotations it
// lacks. It records the Node in s.node; a Node of the same name that another machine
// created is a terminal error recorded in s.nodeErr.
func (r *Reconciler) ensureNode(ctx context.Context, remote ctrlclient.Client, s *scope) error {
	log := ctrl.LoggerFrom(ctx)
	desired := desiredNode(s.machine, s.localMachine)
	log = log.WithValues("Node", klog.KObj(desired))

	node := &corev1.Node{}
	err := remote.Get(ctx, ctrlclient.ObjectKeyFromObject(desired), node)
	switch {
	case apierrors.IsNotFound(err):
		created := desired.DeepCopy()
		if err := remote.Create(ctx, created); err != nil {
			if apierrors.IsAlreadyExists(err) {
				// The cache has not seen it yet; the Node watch brings it.
				return nil
			}
			s.nodeErr = err
			r.recorder.Eventf(s.localMachine, nil, corev1.EventTypeWarning, "NodeCreateFailed", "CreateNode",
				"Creating Node %s failed: %v", desired.Name, err)
			return fmt.Errorf("creating Node %s: %w", desired.Name, err)
		}
		log.Info("Created the simulated Node")
		r.recorder.Eventf(s.localMachine, nil, corev1.EventTypeNormal, "NodeCreated", "CreateNode",
			"Created simulated Node %s", desired.Name)
		s.node = created
		return nil
	case err != nil:
		s.nodeErr = err
		return fmt.Errorf("getting Node %s: %w", desired.Name, err)
	}

	if node.Spec.ProviderID != desired.Spec.ProviderID {
		s.nodeErr = fmt.Errorf("a Node named %s already exists with provider ID %q instead of %q; delete that Node or rename the Machine",
			node.Name, node.Spec.ProviderID, desired.Spec.ProviderID)
		r.recorder.Eventf(s.localMachine, nil, corev1.EventTypeWarning, "NodeCreateFailed", "CreateNode", "%v", s.nodeErr)
		return reconcile.TerminalError(s.nodeErr)
	}
	if err := patchMissingMetadata(ctx, remote, node, desired); err != nil {
		s.nodeErr = err
		return err
	}
	s.node = node
	return nil
}

// reconcileDelete deletes the simulated Node, then removes the finalizer; a LocalMachine that
// clusterctl move deletes after copying it elsewhere leaves the Node to the copy. It does not wait for a
// workload cluster that is gone: when the Cluster is being deleted, its control plane never came
// up, or the workload cluster has been unreachable for unreachableDeleteTimeout, the Node goes
// with the cluster.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if _, moved := s.localMachine.Annotations[clusterctlv1.DeleteForMoveAnnotation]; moved {
		log.Info("Deleted by clusterctl move, leaving the Node to the moved copy")
		removeFinalizer(s)
		return ctrl.Result{}, nil
	}
	if s.localMachine.Spec.Node == infrav1.RealNode {
		// Cluster API has drained the Node; what runs on the host goes whatever the cluster's
		// state, then the Node below.
		if err := r.deleteRealNode(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.machine == nil || s.cluster == nil || !s.controlPlaneInitialized() {
		log.Info("No workload cluster to delete the Node from, removing the finalizer")
		removeFinalizer(s)
		return ctrl.Result{}, nil
	}

	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(s.cluster))
	if errors.Is(err, clustercache.ErrClusterNotConnected) {
		deletingFor := time.Since(s.localMachine.DeletionTimestamp.Time)
		if !s.cluster.DeletionTimestamp.IsZero() || deletingFor > unreachableDeleteTimeout {
			log.Info("Workload cluster is unreachable, leaving the Node to it", "deletingFor", deletingFor.Round(time.Second))
			removeFinalizer(s)
			return ctrl.Result{}, nil
		}
		s.notConnected = true
		return ctrl.Result{RequeueAfter: notConnectedRequeue}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting a client for the workload cluster: %w", err)
	}

	node := &corev1.Node{}
	err = remote.Get(ctx, ctrlclient.ObjectKey{Name: s.machine.Name}, node)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("getting Node %s: %w", s.machine.Name, err)
	case node.Spec.ProviderID != ProviderID(s.machine):
		log.Info("Node has another provider ID, leaving it alone", "Node", klog.KObj(node), "providerID", node.Spec.ProviderID)
	default:
		if err := remote.Delete(ctx, node); err != nil && !apierrors.IsNotFound(err) {
			r.recorder.Eventf(s.localMachine, nil, corev1.EventTypeWarning, "NodeDeleteFailed", "DeleteNode",
				"Deleting Node %s failed: %v", node.Name, err)
			return ctrl.Result{}, fmt.Errorf("deleting Node %s: %w", node.Name, err)
		}
		log.Info("Deleted the Node", "Node", klog.KObj(node))
		r.recorder.Eventf(s.localMachine, nil, corev1.EventTypeNormal, "NodeDeleted", "DeleteNode",
			"Deleted %s Node %s", nodeKind(s.localMachine), node.Name)
	}
	removeFinalizer(s)
	return ctrl.Result{}, nil
}
