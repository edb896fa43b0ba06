package packagereconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/catalog"
	"github.com/flotilla-dev/flotilla/pkg/background"
	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// FieldOwner names the reconciler in managed fields and events.
const FieldOwner = "flotilla-package-controller"

// Defaults of the Reconciler's knobs.
const (
	defaultHelmTimeout       = 3 * time.Minute
	defaultUnreachableRetry  = 10 * time.Second
	defaultConcurrency       = 10
	restConfigRequestTimeout = 30 * time.Second
)

// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packages,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packages/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packagebundlecontrollers;packagebundles,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=flotilla-packages,resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler installs Packages into their clusters.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client ctrlclient.Client
	// Recorder records Events on Packages.
	Recorder events.EventRecorder
	// APIReader reads the package-defaults ConfigMap and credentials Secret from the API server
	// (never a cache that may lag behind the watch event that asked for the read); Client when nil.
	APIReader ctrlclient.Reader
	// Installer installs and uninstalls Helm releases.
	Installer Installer
	// RESTConfigs reaches workload clusters (CAPI's ClusterCache).
	RESTConfigs RESTConfigs
	// LocalConfig is the management cluster's own config: Packages of a management cluster are
	// installed with it. Without it they go through RESTConfigs too.
	LocalConfig *rest.Config
	// HelmTimeout bounds one install, upgrade or uninstall; 3 minutes when zero.
	HelmTimeout time.Duration
	// UnreachableRetry is how soon an unreachable cluster is tried again; 10 s when zero.
	UnreachableRetry time.Duration
	// MaxConcurrentReconciles bounds how many Packages reconcile at once; 10 when zero.
	MaxConcurrentReconciles int
	// UninstallTimeout bounds how long a Package with uninstallOnClusterDelete Ensure holds the
	// teardown of its deleted cluster back, from the Cluster's deletion;
	// predelete.DefaultUninstallTimeout (5 minutes) when zero.
	UninstallTimeout time.Duration

	// calls runs the Helm actions beside the workers (no head-of-line blocking).
	calls background.Runner
}

// SetupWithManager registers the reconciler with mgr. Besides Packages it watches
// PackageBundleControllers (a new active bundle), PackageBundles (one becoming valid) and the
// Ready condition of the Packages that others depend on (dependentsOf).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	switch {
	case r.Client == nil:
		return errors.New("package reconciler: Client is required")
	case r.Recorder == nil:
		return errors.New("package reconciler: Recorder is required")
	case r.Installer == nil:
		return errors.New("package reconciler: Installer is required")
	case r.RESTConfigs == nil && r.LocalConfig == nil:
		return errors.New("package reconciler: RESTConfigs or LocalConfig is required")
	}
	concurrency := r.MaxConcurrentReconciles
	if concurrency <= 0 {
		concurrency = defaultConcurrency
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("package").
		For(&packagesv1.Package{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Watches(&packagesv1.Package{}, handler.EnqueueRequestsFromMapFunc(r.dependentsOf),
			builder.WithPredicates(readinessChanged{})).
		Watches(&packagesv1.PackageBundleController{}, handler.EnqueueRequestsFromMapFunc(r.packagesOfPBC),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&packagesv1.PackageBundle{}, handler.EnqueueRequestsFromMapFunc(r.packagesOfBundle)).
		// A cluster that becomes Ready (or goes away) is worth trying again at once.
		Watches(&flotillav1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.packagesOfPBC),
			builder.WithPredicates(clusterReadinessChanged{})).
		// Helm actions end in the background: their end brings their Package back.
		WatchesRawSource(r.calls.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, RateLimiter: background.RateLimiter()}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the package reconciler: %w", err)
	}
	return nil
}

// scope is what one reconcile learns about a Package.
type scope struct {
	pkg *packagesv1.Package
	// patch writes the Package back: its finalizer and its status.
	patch *objectpatch.Patch

	clusterName string
	// cluster is the Flotilla Cluster; nil when gone.
	cluster *flotillav1.Cluster
	pbc     *packagesv1.PackageBundleController
	bundle  *packagesv1.PackageBundle

	// waiting says what the Package waits for (no PBC, no bundle, dependencies).
	waiting, waitingReason string
	// invalid holds what is wrong with the spec, each error naming its field.
	invalid field.ErrorList
	// resolved is the spec resolved in the active bundle.
	resolved *catalog.Resolved
	// unreachable is why the cluster could not be reached.
	unreachable error
	// progress is installing or upgrading while Helm acts (see progress).
	progress packagesv1.PackageState
	// installErr is Helm's error; result what a successful install did.
	installErr error
	result     *helm.Result
	// deleting is set while the Package is uninstalled; gone once its finalizer is released.
	deleting, gone bool
}

// Reconcile installs one Package, or uninstalls it when it is being deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	p := &packagesv1.Package{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			r.calls.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	s := &scope{pkg: p, patch: objectpatch.New(r.Client, p)}
	defer func() {
		if err := r.patchStatus(ctx, s); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()

	if err := r.observe(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if !p.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if len(s.invalid) > 0 {
		return ctrl.Result{}, r.terminal(s)
	}
	if _, err := s.patch.EnsureFinalizer(ctx, packagesv1.PackageFinalizer); err != nil {
		return objectpatch.RequeueOnConflict(ctrlclient.IgnoreNotFound(err), objectpatch.ConflictRetry)
	}
	if s.resolve(); len(s.invalid) > 0 {
		return ctrl.Result{}, r.terminal(s)
	}
	if s.waiting != "" {
		return ctrl.Result{}, nil // the watches on PBCs and bundles bring it back
	}
	if err := r.ensureDependencies(ctx, s); err != nil || s.waiting != "" {
		return ctrl.Result{}, err
	}
	cfg, err := r.restConfig(ctx, s)
	if err != nil {
		s.unreachable = err
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, packagesv1.ClusterUnreachableReason, "Install", "%v", err)
		return ctrl.Result{RequeueAfter: r.unreachableRetry()}, nil
	}
	return r.install(ctx, s, cfg)
}

// terminal reports invalid input: a Warning and a terminal error (no retry until the spec or
// the bundle changes).
func (r *Reconciler) terminal(s *scope) error {
	msg := s.invalid.ToAggregate().Error()
	r.Recorder.Eventf(s.pkg, nil, corev1.EventTypeWarning, packagesv1.InvalidSpecReason, "Resolve", "%s", msg)
	return reconcile.TerminalError(fmt.Errorf("invalid Package %s: %s", klog.KObj(s.pkg), msg))
}

// patchStatus writes the status the setters compute from s, when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if s.gone {
		return nil
	}
	setStatus(s)
	return s.patch.Write(ctx)
}

func (r *Reconciler) helmTimeout() time.Duration {
	if r.HelmTimeout > 0 {
		return r.HelmTimeout
	}
	return defaultHelmTimeout
}

func (r *Reconciler) unreachableRetry() time.Duration {
	if r.UnreachableRetry > 0 {
		return r.UnreachableRetry
	}
	return defaultUnreachableRetry
}

// dependentsOf maps a Package to the other Packages of its namespace whose version in the
// cluster's active bundle depends on its package: they wait for it to be Ready, and create it
// again when it is deleted. No other Package is woken: each Package that becomes Ready would
// otherwise bring every other one of its cluster back for a Helm resync, work that grows with
// the square of the Packages installed at once and delays them all (head-of-line blocking).
func (r *Reconciler) dependentsOf(ctx context.Context, obj ctrlclient.Object) []reconcile.Request {
	dep, ok := obj.(*packagesv1.Package)
	if !ok {
		return nil
	}
	bundle, err := r.activeBundle(ctx, dep.Namespace)
	if err != nil || bundle == nil {
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Reading the active bundle to find dependents", "package", klog.KObj(dep))
		}
		return nil
	}
	list := &packagesv1.PackageList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(dep.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Packages", "namespace", dep.Namespace)
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		p := &list.Items[i]
		if p.Name != dep.Name && slices.Contains(catalog.Dependencies(bundle, p.Spec), dep.Spec.PackageName) {
			reqs = append(reqs, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(p)})
		}
	}
	return reqs
}

// activeBundle returns the active bundle of the cluster whose Packages live in namespace; nil
// when there is none yet.
func (r *Reconciler) activeBundle(ctx context.Context, namespace string) (*packagesv1.PackageBundle, error) {
	name, ok := packagesv1.ClusterFromNamespace(namespace)
	if !ok {
		return nil, nil
	}
	pbc := &packagesv1.PackageBundleController{}
	if found, err := r.get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: name}, pbc); err != nil || !found {
		return nil, err
	}
	return r.bundleOf(ctx, pbc)
}

// bundleOf returns the active bundle of pbc; nil when it has none, or it does not exist.
func (r *Reconciler) bundleOf(ctx context.Context, pbc *packagesv1.PackageBundleController) (*packagesv1.PackageBundle, error) {
	if pbc.Spec.ActiveBundle == "" {
		return nil, nil
	}
	b := &packagesv1.PackageBundle{}
	if found, err := r.get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: pbc.Spec.ActiveBundle}, b); err != nil || !found {
		return nil, err
	}
	return b, nil
}

// packagesOfPBC maps a PackageBundleController, or a Flotilla Cluster, to the Packages of the
// cluster of its name.
func (r *Reconciler) packagesOfPBC(ctx context.Context, obj ctrlclient.Object) []reconcile.Request {
	return r.packagesIn(ctx, packagesv1.ClusterNamespace(obj.GetName()))
}

// packagesOfBundle maps a PackageBundle to the Packages of the clusters whose active bundle it is.
func (r *Reconciler) packagesOfBundle(ctx context.Context, obj ctrlclient.Object) []reconcile.Request {
	pbcs := &packagesv1.PackageBundleControllerList{}
	if err := r.Client.List(ctx, pbcs, ctrlclient.InNamespace(packagesv1.PackagesNamespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing PackageBundleControllers")
		return nil
	}
	var reqs []reconcile.Request
	for i := range pbcs.Items {
		if pbcs.Items[i].Spec.ActiveBundle == obj.GetName() {
			reqs = append(reqs, r.packagesIn(ctx, packagesv1.ClusterNamespace(pbcs.Items[i].Name))...)
		}
	}
	return reqs
}

func (r *Reconciler) packagesIn(ctx context.Context, ns string) []reconcile.Request {
	list := &packagesv1.PackageList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(ns)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Packages", "namespace", ns)
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// clusterReadinessChanged passes deletions and changes of a Flotilla Cluster's Ready
// condition or deletion timestamp.
type clusterReadinessChanged struct{ predicate.Funcs }

func (clusterReadinessChanged) Create(event.CreateEvent) bool { return false }

func (clusterReadinessChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*flotillav1.Cluster)
	n, ok2 := e.ObjectNew.(*flotillav1.Cluster)
	if !ok1 || !ok2 {
		return false
	}
	return meta.IsStatusConditionTrue(o.Status.Conditions, flotillav1.ReadyCondition) !=
		meta.IsStatusConditionTrue(n.Status.Conditions, flotillav1.ReadyCondition) ||
		o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
}

// readinessChanged passes creations, deletions and changes of a Package's Ready condition.
type readinessChanged struct{ predicate.Funcs }

func (readinessChanged) Update(e event.UpdateEvent) bool {
	o, ok1 := e.ObjectOld.(*packagesv1.Package)
	n, ok2 := e.ObjectNew.(*packagesv1.Package)
	if !ok1 || !ok2 {
		return false
	}
	return meta.IsStatusConditionTrue(o.Status.Conditions, packagesv1.ReadyCondition) !=
		meta.IsStatusConditionTrue(n.Status.Conditions, packagesv1.ReadyCondition)
}
