package clusterlifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
	"github.com/flotilla-dev/flotilla/pkg/predelete"
)

// FieldOwner names the reconciler in managed fields and events.
const FieldOwner = "flotilla-packages-lifecycle"

// PreDeleteHook names the packages component's pre-delete hook on Clusters (package predelete):
// a deleted Cluster's control plane stays until its Packages are uninstalled.
const PreDeleteHook = "packages"

// packageUninstallPoll is how often a deleting Cluster checks whether its Packages are gone, in
// case the event of the last one's going was missed.
const packageUninstallPoll = 2 * time.Second

// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packagebundlecontrollers,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packages,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler creates and cleans up the packages objects of Flotilla Clusters.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client ctrlclient.Client
	// Recorder records Events on Flotilla Clusters.
	Recorder events.EventRecorder
	// APIReader reads from the API server, past the cache: what another Cluster created a moment
	// ago.
	APIReader ctrlclient.Reader
}

// SetupWithManager registers the reconciler with mgr. It watches Flotilla Clusters, and the
// Packages whose going lets a deleted Cluster's teardown go on.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("packages lifecycle reconciler: Client is required")
	case r.Recorder == nil:
		return errors.New("packages lifecycle reconciler: Recorder is required")
	case r.APIReader == nil:
		return errors.New("packages lifecycle reconciler: APIReader is required")
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("packages-cluster-lifecycle").
		For(&flotillav1.Cluster{}).
		Watches(&packagesv1.Package{}, handler.EnqueueRequestsFromMapFunc(r.clusterOfPackage),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the packages lifecycle reconciler: %w", err)
	}
	return nil
}

// Reconcile ensures the namespace and PackageBundleController of one Flotilla Cluster, or
// removes them (after its Packages) when the Cluster is being deleted. Objects of those names
// that belong to another Cluster are left alone, and the Cluster's PackagesReady condition says
// so.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &flotillav1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, c)
	}
	patch := objectpatch.New(r.Client, c)
	if _, err := patch.EnsureFinalizer(ctx, packagesv1.ClusterCleanupFinalizer); err != nil {
		return objectpatch.RequeueOnConflict(ctrlclient.IgnoreNotFound(err), objectpatch.ConflictRetry)
	}
	if err := predelete.Ensure(ctx, r.Client, c, PreDeleteHook); err != nil {
		return objectpatch.RequeueOnConflict(ctrlclient.IgnoreNotFound(err), objectpatch.ConflictRetry)
	}
	shared := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: packagesv1.PackagesNamespace}}
	if err := r.createIfMissing(ctx, c, shared); err != nil {
		return ctrl.Result{}, err
	}
	var conflicts []ctrlclient.Object
	for _, desired := range []ctrlclient.Object{desiredNamespace(c), desiredPBC(c)} {
		conflict, err := r.ensureOwned(ctx, c, desired)
		if err != nil {
			return ctrl.Result{}, err
		}
		if conflict != nil {
			conflicts = append(conflicts, conflict)
		}
	}
	cond := packagesReady(c, conflicts)
	if !setPackagesReady(c, cond) {
		return ctrl.Result{}, nil
	}
	if err := patch.Write(ctx, objectpatch.WithStatusApply(FieldOwner, ownStatus)); err != nil {
		return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
	}
	if cond.Status == metav1.ConditionFalse {
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, packagesv1.NameConflictReason, "Reconcile", "%s", cond.Message)
	}
	return ctrl.Result{}, nil
}

// ensureOwned makes desired, a derived object of Cluster c, exist and carry c's labels: it
// creates it when missing and writes c's UID on it when it is c's from before (see adoptable).
// It returns the object as found when it belongs to someone else, and then changes nothing.
func (r *Reconciler) ensureOwned(ctx context.Context, c *flotillav1.Cluster, desired ctrlclient.Object) (ctrlclient.Object, error) {
	found, err := r.find(ctx, desired)
	if err != nil {
		return nil, err
	}
	if found == nil {
		created, err := r.create(ctx, c, desired)
		if err != nil || created {
			return nil, err
		}
		// Someone else created it since it was read (another Cluster of the same name, created
		// at the same moment): read it again, from the API server, to see whose it is.
		found = desired.DeepCopyObject().(ctrlclient.Object)
		if err := r.APIReader.Get(ctx, ctrlclient.ObjectKeyFromObject(desired), found); err != nil {
			return nil, fmt.Errorf("reading %s %s: %w", kindOf(desired), klog.KObj(desired), err)
		}
	}
	switch ownershipOf(c, found) {
	case adoptable:
		before := found.DeepCopyObject().(ctrlclient.Object)
		found.SetLabels(mergeLabels(found.GetLabels(), desired.GetLabels()))
		if err := r.Client.Patch(ctx, found, ctrlclient.MergeFromWithOptions(before, ctrlclient.MergeFromWithOptimisticLock{})); err != nil {
			return nil, fmt.Errorf("labelling %s %s with the UID of Cluster %s: %w", kindOf(found), klog.KObj(found), klog.KObj(c), err)
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Adopted", "Reconcile",
			"%s %s was this Cluster's before (same namespace and name); labelled with its UID", kindOf(found), klog.KObj(found))
	case foreign:
		return found, nil
	}
	return nil, nil
}

// find reads the object of obj's key, or returns nil when there is none.
func (r *Reconciler) find(ctx context.Context, obj ctrlclient.Object) (ctrlclient.Object, error) {
	found := obj.DeepCopyObject().(ctrlclient.Object)
	if err := r.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), found); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s: %w", kindOf(obj), klog.KObj(obj), err)
	}
	return found, nil
}

// reconcileDelete deletes the Cluster's Packages and waits until their finalizers have
// uninstalled them, then deletes the namespace and the PackageBundleController and releases
// the Cluster. Only what carries the Cluster's UID is deleted: a namespace or
// PackageBundleController of another Cluster of the same name, and the Packages in it, are left
// alone.
func (r *Reconciler) reconcileDelete(ctx context.Context, c *flotillav1.Cluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, packagesv1.ClusterCleanupFinalizer) {
		return ctrl.Result{}, nil
	}
	if _, moved := c.Annotations[clusterctlv1.DeleteForMoveAnnotation]; moved {
		if err := r.removeFinalizer(ctx, c); err != nil {
			return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Released", "Delete",
			"Moved to another management cluster: its packages stay installed")
		return ctrl.Result{}, nil
	}
	var mine, others []ctrlclient.Object
	for _, desired := range []ctrlclient.Object{desiredNamespace(c), desiredPBC(c)} {
		found, err := r.find(ctx, desired)
		if err != nil {
			return ctrl.Result{}, err
		}
		switch ownershipOf(c, found) {
		case owned:
			mine = append(mine, found)
		case adoptable, foreign:
			others = append(others, found)
		}
	}
	if len(mine) > 0 && kindOf(mine[0]) == "namespace" {
		waiting, err := r.deletePackages(ctx, c, mine[0].GetName())
		if err != nil {
			return ctrl.Result{}, err
		}
		if waiting {
			return ctrl.Result{RequeueAfter: packageUninstallPoll}, nil
		}
	}
	for _, obj := range mine {
		uid := obj.GetUID()
		if err := r.Client.Delete(ctx, obj, ctrlclient.Preconditions{UID: &uid}); ctrlclient.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting %s %s: %w", kindOf(obj), klog.KObj(obj), err)
		}
	}
	// Said before the hook goes, which lets the teardown go on, so that the events tell the
	// teardown in the order it happened; and said once: a retry after a conflict finds the hook
	// gone.
	if metav1.HasAnnotation(c.ObjectMeta, predelete.Annotation(PreDeleteHook)) {
		for _, obj := range others {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "LeftAlone", "Delete",
				"Left %s %s alone: it does not carry this Cluster's UID", kindOf(obj), klog.KObj(obj))
		}
		if len(mine) > 0 {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Deleted", "Delete",
				"Packages uninstalled; deleted namespace %s and PackageBundleController %s/%s",
				packagesv1.ClusterNamespace(c.Name), packagesv1.PackagesNamespace, c.Name)
		}
	}
	if err := r.removeFinalizer(ctx, c); err != nil {
		return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
	}
	return ctrl.Result{}, nil
}

// deletePackages deletes the Packages in ns, the Cluster's own namespace, and reports whether
// some are still there: their finalizers uninstall their releases, and the caller comes back.
func (r *Reconciler) deletePackages(ctx context.Context, c *flotillav1.Cluster, ns string) (waiting bool, err error) {
	pkgs := &packagesv1.PackageList{}
	if err := r.Client.List(ctx, pkgs, ctrlclient.InNamespace(ns)); err != nil {
		return false, fmt.Errorf("listing Packages of Cluster %s: %w", klog.KObj(c), err)
	}
	for i := range pkgs.Items {
		p := &pkgs.Items[i]
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		if err := r.Client.Delete(ctx, p); ctrlclient.IgnoreNotFound(err) != nil {
			r.Recorder.Eventf(c, p, corev1.EventTypeWarning, "DeleteFailed", "Delete", "Deleting Package %s: %v", klog.KObj(p), err)
			return false, fmt.Errorf("deleting Package %s: %w", klog.KObj(p), err)
		}
		r.Recorder.Eventf(c, p, corev1.EventTypeNormal, "Uninstalling", "Delete", "Uninstalling package %s", p.Name)
	}
	return len(pkgs.Items) > 0, nil
}

// createIfMissing creates obj unless it exists. An existing object is left alone: its users
// (the CLI, an admin) own its spec.
func (r *Reconciler) createIfMissing(ctx context.Context, c *flotillav1.Cluster, obj ctrlclient.Object) error {
	found, err := r.find(ctx, obj)
	if err != nil || found != nil {
		return err
	}
	_, err = r.create(ctx, c, obj)
	return err
}

// create creates obj and reports whether it did: false, with no error, when it exists already.
func (r *Reconciler) create(ctx context.Context, c *flotillav1.Cluster, obj ctrlclient.Object) (bool, error) {
	if err := r.Client.Create(ctx, obj, ctrlclient.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return false, nil
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "CreateFailed", "Create", "Creating %s %s: %v", kindOf(obj), klog.KObj(obj), err)
		return false, fmt.Errorf("creating %s %s: %w", kindOf(obj), klog.KObj(obj), err)
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Created", "Create", "Created %s %s", kindOf(obj), klog.KObj(obj))
	return true, nil
}

// removeFinalizer lets the Cluster go, as far as packages are concerned: its pre-delete hook
// (its control plane may go) and then its finalizer. c is as read: nothing else of it was
// written.
func (r *Reconciler) removeFinalizer(ctx context.Context, c *flotillav1.Cluster) error {
	if err := predelete.Release(ctx, r.Client, c, PreDeleteHook); err != nil {
		return err
	}
	return objectpatch.New(r.Client, c).RemoveFinalizer(ctx, packagesv1.ClusterCleanupFinalizer)
}

// clusterOfPackage maps a Package that is gone to the Flotilla Cluster whose namespace holds it,
// as the namespace's labels name it.
func (r *Reconciler) clusterOfPackage(ctx context.Context, p ctrlclient.Object) []reconcile.Request {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, ctrlclient.ObjectKey{Name: p.GetNamespace()}, ns); err != nil {
		return nil // the namespace is gone too: the Cluster's reconcile that deleted it is done
	}
	name, namespace := ns.Labels[packagesv1.ClusterNameLabel], ns.Labels[packagesv1.ClusterNamespaceLabel]
	if name == "" || namespace == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ctrlclient.ObjectKey{Namespace: namespace, Name: name}}}
}

// labels mark an object as belonging to Cluster c.
func labels(c *flotillav1.Cluster) map[string]string {
	return map[string]string{
		packagesv1.ClusterNameLabel:      c.Name,
		packagesv1.ClusterNamespaceLabel: c.Namespace,
		packagesv1.ClusterUIDLabel:       string(c.UID),
	}
}

// mergeLabels returns current with want's labels set over it.
func mergeLabels(current, want map[string]string) map[string]string {
	merged := maps.Clone(current)
	if merged == nil {
		merged = map[string]string{}
	}
	maps.Copy(merged, want)
	return merged
}

// desiredNamespace is the namespace of c's Packages.
func desiredNamespace(c *flotillav1.Cluster) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   packagesv1.ClusterNamespace(c.Name),
		Labels: labels(c),
	}}
}

// desiredPBC is c's PackageBundleController as first created: defaults only.
func desiredPBC(c *flotillav1.Cluster) *packagesv1.PackageBundleController {
	return &packagesv1.PackageBundleController{ObjectMeta: metav1.ObjectMeta{
		Name:      c.Name,
		Namespace: packagesv1.PackagesNamespace,
		Labels:    labels(c),
	}}
}
