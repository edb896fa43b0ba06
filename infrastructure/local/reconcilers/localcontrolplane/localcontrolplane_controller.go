package localcontrolplane

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/predicates"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// Requeue intervals.
const (
	// startingRequeue is how often a starting control plane is asked for /readyz: kube-apiserver
	// takes about 4 s to get ready, so half a second adds little to it.
	startingRequeue = 500 * time.Millisecond
	// healthyRequeue is how often an available control plane is checked for dead processes.
	healthyRequeue = 30 * time.Second
	// binariesRequeue is how often missing binaries are looked for again.
	binariesRequeue = 30 * time.Second
	// readyTimeout bounds one readiness probe.
	readyTimeout = 5 * time.Second
)

// +kubebuilder:rbac:groups=controlplane.flotilla.dev,resources=localcontrolplanes;localcontrolplanes/status;localcontrolplanes/finalizers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status,verbs=get;list;watch
// +kubebuilder:rbac:groups=core,resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=core,namespace=flotilla-system,resources=configmaps,resourceNames=registry-mirror,verbs=get

// Reconciler reconciles a LocalControlPlane.
type Reconciler struct {
	// Client reads and writes objects in the management cluster.
	Client ctrlclient.Client
	// APIReader reads the management cluster's registry mirror (realnode.MirrorOf) without a
	// cache of ConfigMaps.
	APIReader ctrlclient.Reader
	// Home is $FLOTILLA_HOME: control planes keep their data in Home/clusters/<cluster>.
	Home string
	// BinRoot is the binary cache holding <version>/kube-apiserver, etcd, ... (binaries.DefaultRoot()).
	BinRoot string
	// ManagementServer is the URL of the management cluster's API server, recorded with each
	// control plane (controlplane.Config.ManagedBy); SetupWithManager takes it from the manager.
	ManagementServer string

	recorder events.EventRecorder
	// started is when this reconciler was set up.
	started time.Time

	// seen remembers, per LocalControlPlane, the processes this reconciler has reported, so that
	// finding processes running after a manager start is reported once as an adoption, and each
	// restart and exit once.
	seenMu sync.Mutex
	seen   map[types.NamespacedName]map[string]seenProcess
}

// seenProcess is what the reconciler last reported about a process.
type seenProcess struct {
	pid      int
	exitedAt time.Time
}

// SetupWithManager registers the reconciler with mgr. It watches LocalControlPlanes and the
// Clusters that reference them (created, paused and unpaused).
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.APIReader == nil || r.Home == "" || r.BinRoot == "" {
		return errors.New("localcontrolplane reconciler: Client, APIReader, Home and BinRoot must be set")
	}
	log := ctrl.LoggerFrom(ctx).WithValues("controller", "localcontrolplane")
	err := ctrl.NewControllerManagedBy(mgr).
		Named("localcontrolplane").
		For(&controlplanev1.LocalControlPlane{}).
		WithOptions(options).
		WatchesRawSource(source.Func(r.watchRecords)).
		Watches(
			&clusterv1.Cluster{},
			handler.EnqueueRequestsFromMapFunc(clusterToLocalControlPlane),
			builder.WithPredicates(predicates.Any(mgr.GetScheme(), log,
				predicates.ClusterCreateNotPaused(mgr.GetScheme(), log),
				predicates.ClusterPausedTransitions(mgr.GetScheme(), log),
			)),
		).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the localcontrolplane controller: %w", err)
	}
	r.recorder = mgr.GetEventRecorder("localcontrolplane-controller")
	r.seen = map[types.NamespacedName]map[string]seenProcess{}
	r.started = time.Now()
	if r.ManagementServer == "" {
		r.ManagementServer = mgr.GetConfig().Host
	}
	return nil
}

// Reconcile runs, observes or deletes the control plane of one LocalControlPlane.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	lcp := &controlplanev1.LocalControlPlane{}
	if err := r.Client.Get(ctx, req.NamespacedName, lcp); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("getting LocalControlPlane: %w", err)
	}

	cluster, err := r.owningCluster(ctx, lcp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cluster != nil {
		ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("Cluster", klog.KObj(cluster)))
	}

	// Add the finalizer first to avoid racing a delete against starting processes.
	patch := objectpatch.New(r.Client, lcp)
	if stop, res, err := objectpatch.Begin(ctx, patch, lcp, controlplanev1.LocalControlPlaneFinalizer, cluster); stop {
		return res, err
	}
	if cluster != nil {
		// Like the finalizer, the endpoint is written on its own before anything starts; the
		// update brings the next reconcile.
		if endpointChosen, err := r.ensureEndpoint(ctx, patch, lcp); err != nil || endpointChosen {
			return ctrl.Result{}, err
		}
	}

	s := &scope{lcp: lcp, cluster: cluster, clusterName: clusterName(lcp, cluster)}
	defer func() {
		setStatus(s)
		if reterr == nil {
			lcp.Status.ObservedGeneration = lcp.Generation
		}
		// One write for the whole status: see package objectpatch.
		if err := patch.Write(ctx); err != nil {
			reterr = kerrors.NewAggregate([]error{reterr, err})
		}
	}()

	if !lcp.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if cluster == nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Waiting for a Cluster that references this LocalControlPlane")
		return ctrl.Result{}, nil
	}
	return runPhases(ctx, s,
		r.reconcileNameConflict,
		r.reconcileBinaries,
		r.reconcileProcesses,
		r.reconcileSecrets,
		r.reconcileReadiness,
	)
}

// phase is one step of reconciling a LocalControlPlane. Each phase records what it learns in
// the scope and does nothing when an earlier phase left it without its inputs.
type phase func(ctx context.Context, s *scope) (ctrl.Result, error)

// runPhases runs every phase in order, like CAPI's reconcilers do, and returns the errors of all
// of them or else the shortest requeue any of them asked for.
func runPhases(ctx context.Context, s *scope, phases ...phase) (ctrl.Result, error) {
	var result ctrl.Result
	var errs []error
	for _, run := range phases {
		res, err := run(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		result = util.LowestNonZeroResult(result, res)
	}
	if len(errs) > 0 {
		return ctrl.Result{}, kerrors.NewAggregate(errs)
	}
	return result, nil
}

// clusterName returns the name of the LocalControlPlane's Cluster: the owner's, or else the
// cluster-name label CAPI sets.
func clusterName(lcp *controlplanev1.LocalControlPlane, cluster *clusterv1.Cluster) string {
	if cluster != nil {
		return cluster.Name
	}
	return lcp.Labels[clusterv1.ClusterNameLabel]
}

// owningCluster returns the Cluster of lcp, nil while there is none: its owner, or before CAPI
// has set the owner reference, the Cluster its cluster-name label names when that Cluster's
// controlPlaneRef names lcp. Starting without waiting for the owner reference saves a round of
// CAPI's Cluster controller, seconds on a busy machine, on every cluster create.
func (r *Reconciler) owningCluster(ctx context.Context, lcp *controlplanev1.LocalControlPlane) (*clusterv1.Cluster, error) {
	cluster, err := util.GetOwnerCluster(ctx, r.Client, lcp.ObjectMeta)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("getting the owner Cluster: %w", err)
	case cluster != nil:
		return cluster, nil
	}
	name := lcp.Labels[clusterv1.ClusterNameLabel]
	if name == "" {
		return nil, nil
	}
	cluster = &clusterv1.Cluster{}
	if err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: lcp.Namespace, Name: name}, cluster); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("getting Cluster %s: %w", name, err)
	}
	for _, req := range clusterToLocalControlPlane(ctx, cluster) {
		if req.Name == lcp.Name {
			return cluster, nil
		}
	}
	return nil, nil
}

// clusterToLocalControlPlane maps a Cluster to the LocalControlPlane it references.
func clusterToLocalControlPlane(_ context.Context, o ctrlclient.Object) []reconcile.Request {
	cluster, ok := o.(*clusterv1.Cluster)
	if !ok {
		return nil
	}
	ref := cluster.Spec.ControlPlaneRef
	if !ref.IsDefined() || ref.APIGroup != controlplanev1.GroupVersion.Group || ref.Kind != "LocalControlPlane" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ctrlclient.ObjectKey{Namespace: cluster.Namespace, Name: ref.Name}}}
}

// remember records the processes of a LocalControlPlane as reported. It returns what it knew
// about them before (nil when it had never seen this control plane, as after a manager start).
func (r *Reconciler) remember(key types.NamespacedName, processes []controlplane.ProcessStatus) (previous map[string]seenProcess) {
	r.seenMu.Lock()
	defer r.seenMu.Unlock()
	previous = r.seen[key]
	current := make(map[string]seenProcess, len(processes))
	for _, p := range processes {
		current[p.Name] = seenProcess{pid: p.PID, exitedAt: p.History.ExitedAt}
	}
	r.seen[key] = current
	return previous
}

// forget drops what remember recorded for a deleted LocalControlPlane.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.seenMu.Lock()
	defer r.seenMu.Unlock()
	delete(r.seen, key)
}
