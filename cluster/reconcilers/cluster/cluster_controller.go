package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// FieldOwner is the server-side apply field manager of everything the reconciler writes.
const FieldOwner = "flotilla-cluster-controller"

// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters/status;clusters/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;machinedeployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=localclusters;localmachinetemplates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=localdatacenterconfigs;localmachineconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=controlplane.flotilla.dev,resources=localcontrolplanes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create;update;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler turns a Flotilla Cluster into the Cluster API objects of its provider (provider.go)
// and reports their state back in the Cluster's status.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client ctrlclient.Client

	// Recorder records Events on Flotilla Clusters.
	Recorder events.EventRecorder

	// ResolveVersion turns spec.kubernetesVersion ("1.36") into the full version the control
	// plane runs ("v1.36.3"); binaries.ResolveMinor in production. Its error says which
	// versions are supported.
	ResolveVersion func(minor string) (string, error)

	// MaxConcurrentReconciles bounds how many Clusters reconcile at once; 0 means 4.
	MaxConcurrentReconciles int

	// applied records the last apply of each object (apply.go), keyed by appliedKey, so that an
	// apply that would change nothing is skipped.
	applied sync.Map
}

// SetupWithManager registers the reconciler with mgr: it reconciles Flotilla Clusters and
// watches what they produce (the CAPI Cluster it owns; the LocalControlPlane and
// MachineDeployments, by their cluster.flotilla.dev/cluster-name label) and the provider configs
// they reference, so status and invalid references update promptly.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("cluster reconciler: Client is required")
	case r.Recorder == nil:
		return errors.New("cluster reconciler: Recorder is required")
	case r.ResolveVersion == nil:
		return errors.New("cluster reconciler: ResolveVersion is required")
	}
	concurrency := r.MaxConcurrentReconciles
	if concurrency <= 0 {
		concurrency = 4
	}
	byLabel := handler.EnqueueRequestsFromMapFunc(clusterFromLabel)
	b := ctrl.NewControllerManagedBy(mgr).
		Named("flotilla-cluster").
		// Status-only changes of our own object (our status patches) need no reconcile.
		For(&flotillav1.Cluster{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&clusterv1.Cluster{}).
		Watches(&controlplanev1.LocalControlPlane{}, byLabel).
		Watches(&clusterv1.MachineDeployment{}, byLabel).
		// A Packet cluster's status follows these (packet.go).
		Watches(&kubeadmcontrolplanev1.KubeadmControlPlane{}, byLabel).
		Watches(&infrav1.PacketCluster{}, byLabel).
		Watches(&clusterv1.Machine{}, handler.EnqueueRequestsFromMapFunc(clusterOfPacketMachine)).
		// A ClusterClass cluster waits for its class (clusterclass.go).
		Watches(&clusterv1.ClusterClass{}, handler.EnqueueRequestsFromMapFunc(r.clustersOfClass))
	// The configs of every provider, which Clusters reference.
	for _, p := range providers.All() {
		for _, config := range []providers.Config{p.DatacenterConfig, p.MachineConfig} {
			b = b.Watches(config.New(), handler.EnqueueRequestsFromMapFunc(r.clustersReferencing(config.Kind)))
		}
	}
	err := b.WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the cluster reconciler: %w", err)
	}
	return nil
}

// Reconcile brings the CAPI objects of one Flotilla Cluster in line with its spec, or tears them
// down when the Cluster is being deleted. Status is written once, at the end, from what the
// phases found.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	c := &flotillav1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}

	s := &scope{cluster: c, patch: objectpatch.New(r.Client, c), provider: r.providerFor(c)}
	// The version is resolved up front so status can compare against it on every path; an
	// unsupported version is reported as invalid spec by resolveInputs.
	s.version, _ = r.ResolveVersion(c.Spec.KubernetesVersion)
	defer func() {
		if err := r.patchStatus(ctx, s); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()

	if !c.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if _, err := s.patch.EnsureFinalizer(ctx, flotillav1.ClusterFinalizer); err != nil {
		return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
	}

	if err := r.observe(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if r.paused(s) {
		return ctrl.Result{}, r.reconcilePaused(ctx, s)
	}

	// An existing CAPI Cluster is applied before the spec's references are checked: its desired
	// state depends on the spec alone, and applying it is how the reconciler notices a pause it
	// must stand aside for (a move), even when a reference has since become invalid.
	if s.capiCluster != nil {
		if err := r.reconcileCAPICluster(ctx, s); err != nil || s.pause != notPaused {
			return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
		}
	}

	if err := r.resolveInputs(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if len(s.invalid) > 0 {
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, flotillav1.InvalidSpecReason, "Validate", "%s", errorsMessage(s.invalid))
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("invalid spec: %w", s.invalid.ToAggregate()))
	}

	phases := []func(context.Context, *scope) error{
		r.reconcileCAPICluster,
		r.reconcileObjects,
		r.pruneWorkers,
	}
	for _, phase := range phases {
		if err := phase(ctx, s); err != nil || s.pause != notPaused {
			return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
		}
	}
	return ctrl.Result{RequeueAfter: s.requeueAfter}, nil
}

// scope holds what one reconcile learns about a Cluster. Phases fill it in; setStatus reads it.
type scope struct {
	cluster *flotillav1.Cluster
	// patch writes the Cluster back: its finalizer, its move annotations, its status.
	patch *objectpatch.Patch
	// provider is the Cluster's infrastructure provider (provider.go), with what it read.
	provider provider

	// version is the full Kubernetes version the spec asks for; empty when unsupported.
	version string
	// groupVersions are the full Kubernetes versions of the worker node groups that pin one
	// (spec.workerNodeGroups[].kubernetesVersion), by group name.
	groupVersions map[string]string
	// invalid lists what is wrong with the spec, each error naming its field.
	invalid field.ErrorList
	// requeueAfter, when set, has the Cluster looked at again after that long: a provider waits
	// for something no watch reports.
	requeueAfter time.Duration

	// pause says whether and why reconciliation stands still.
	pause pauseState
	// deleting is set while the Cluster is being deleted; deletingForMove when clusterctl move
	// deletes it after copying it elsewhere.
	deleting, deletingForMove bool
	// preDeleteHooks name the components that hold the deletion of the CAPI Cluster back.
	preDeleteHooks []string
	// gone is set once the finalizer is removed: there is no status left to write.
	gone bool

	// capiCluster is the CAPI Cluster of that name; nil when absent. capiApplied is set once
	// this reconcile applied it.
	capiCluster *clusterv1.Cluster
	capiApplied bool
	// controlPlaneVersion is the Kubernetes version the control plane's spec asked for when the
	// reconcile started (the provider's observe reads it); empty when it has none yet.
	controlPlaneVersion string
	// machineDeployments are the cluster's MachineDeployments, by worker node group.
	machineDeployments map[string]*clusterv1.MachineDeployment
}

// patchStatus computes the status from the scope and writes it when it changed: the part of it
// the reconciler owns (ownStatus), by server-side apply.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if s.gone {
		return nil
	}
	setStatus(s)
	return s.patch.Write(ctx, objectpatch.WithStatusApply(FieldOwner, ownStatus))
}

// clusterFromLabel maps an object Flotilla created to its Flotilla Cluster through the
// cluster.flotilla.dev/cluster-name label.
func clusterFromLabel(_ context.Context, obj ctrlclient.Object) []reconcile.Request {
	name, ok := obj.GetLabels()[flotillav1.ClusterNameLabel]
	if !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ctrlclient.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}

// clustersReferencing maps a provider config of kind to the Clusters of its namespace that
// reference it, so a config created after its Cluster (a multi-document file applied in order)
// or changed later is picked up.
func (r *Reconciler) clustersReferencing(kind string) handler.TypedMapFunc[ctrlclient.Object, reconcile.Request] {
	return func(ctx context.Context, obj ctrlclient.Object) []reconcile.Request {
		clusters := &flotillav1.ClusterList{}
		if err := r.Client.List(ctx, clusters, ctrlclient.InNamespace(obj.GetNamespace())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing Clusters to map a config to", "config", klog.KObj(obj))
			return nil
		}
		var requests []reconcile.Request
		for i := range clusters.Items {
			c := &clusters.Items[i]
			if references(c, flotillav1.Ref{Kind: kind, Name: obj.GetName()}) {
				requests = append(requests, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(c)})
			}
		}
		return requests
	}
}

// references reports whether a Cluster's spec names ref.
func references(c *flotillav1.Cluster, ref flotillav1.Ref) bool {
	if c.Spec.DatacenterRef == ref {
		return true
	}
	if cp := c.Spec.ControlPlane.MachineGroupRef; cp != nil && *cp == ref {
		return true
	}
	for _, g := range c.Spec.WorkerNodeGroups {
		if g.MachineGroupRef == ref {
			return true
		}
	}
	return false
}
