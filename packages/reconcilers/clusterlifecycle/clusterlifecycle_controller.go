package clusterlifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/predelete"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// FieldOwner names the reconciler in managed fields and events.
const FieldOwner = "flotilla-packages-lifecycle"

// PreDeleteHook names the packages component's pre-delete hook on Clusters (package predelete):
// a deleted Cluster's control plane stays until its Packages are uninstalled.
const PreDeleteHook = "packages"

// packageUninstallPoll is how often a deleting Cluster checks whether its Packages are gone.
const packageUninstallPoll = 2 * time.Second

// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packagebundlecontrollers,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packages,verbs=get;list;watch;delete;deletecollection
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler creates and cleans up the packages objects of Flotilla Clusters.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client ctrlclient.Client
	// Recorder records Events on Flotilla Clusters.
	Recorder events.EventRecorder
}

// SetupWithManager registers the reconciler with mgr.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("packages lifecycle reconciler: Client is required")
	case r.Recorder == nil:
		return errors.New("packages lifecycle reconciler: Recorder is required")
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("packages-cluster-lifecycle").
		For(&flotillav1.Cluster{}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the packages lifecycle reconciler: %w", err)
	}
	return nil
}

// Reconcile ensures the namespace and PackageBundleController of one Flotilla Cluster, or
// removes them (after its Packages) when the Cluster is being deleted.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &flotillav1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, c)
	}
	if _, err := objectpatch.New(r.Client, c).EnsureFinalizer(ctx, packagesv1.ClusterCleanupFinalizer); err != nil {
		return objectpatch.RequeueOnConflict(ctrlclient.IgnoreNotFound(err), objectpatch.ConflictRetry)
	}
	if err := predelete.Ensure(ctx, r.Client, c, PreDeleteHook); err != nil {
		return objectpatch.RequeueOnConflict(ctrlclient.IgnoreNotFound(err), objectpatch.ConflictRetry)
	}
	shared := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: packagesv1.PackagesNamespace}}
	for _, obj := range []ctrlclient.Object{shared, desiredNamespace(c), desiredPBC(c)} {
		if err := r.createIfMissing(ctx, c, obj); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// reconcileDelete deletes the Cluster's Packages and waits until their finalizers have
// uninstalled them, then deletes the namespace and the PackageBundleController and releases
// the Cluster.
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

	ns := packagesv1.ClusterNamespace(c.Name)
	pkgs := &packagesv1.PackageList{}
	if err := r.Client.List(ctx, pkgs, ctrlclient.InNamespace(ns)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing Packages of Cluster %s: %w", klog.KObj(c), err)
	}
	if len(pkgs.Items) > 0 {
		for i := range pkgs.Items {
			p := &pkgs.Items[i]
			if !p.DeletionTimestamp.IsZero() {
				continue
			}
			if err := r.Client.Delete(ctx, p); ctrlclient.IgnoreNotFound(err) != nil {
				r.Recorder.Eventf(c, p, corev1.EventTypeWarning, "DeleteFailed", "Delete", "Deleting Package %s: %v", klog.KObj(p), err)
				return ctrl.Result{}, fmt.Errorf("deleting Package %s: %w", klog.KObj(p), err)
			}
			r.Recorder.Eventf(c, p, corev1.EventTypeNormal, "Uninstalling", "Delete", "Uninstalling package %s", p.Name)
		}
		// The Packages' finalizers uninstall their releases; come back when they are gone.
		return ctrl.Result{RequeueAfter: packageUninstallPoll}, nil
	}

	for _, obj := range []ctrlclient.Object{desiredPBC(c), desiredNamespace(c)} {
		if err := r.Client.Delete(ctx, obj); ctrlclient.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting %T %s: %w", obj, klog.KObj(obj), err)
		}
	}
	if err := r.removeFinalizer(ctx, c); err != nil {
		return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Deleted", "Delete",
		"Packages uninstalled; deleted namespace %s and PackageBundleController %s/%s", ns, packagesv1.PackagesNamespace, c.Name)
	return ctrl.Result{}, nil
}

// createIfMissing creates obj unless it exists. Existing objects are left alone: their users
// (the CLI, an admin) own their specs.
func (r *Reconciler) createIfMissing(ctx context.Context, c *flotillav1.Cluster, obj ctrlclient.Object) error {
	err := r.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj.DeepCopyObject().(ctrlclient.Object))
	if err == nil {
		return nil
	}
	if !apierrors.IsNotFound(err) {
		return fmt.Errorf("reading %T %s: %w", obj, klog.KObj(obj), err)
	}
	if err := r.Client.Create(ctx, obj, ctrlclient.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "CreateFailed", "Create", "Creating %T %s: %v", obj, klog.KObj(obj), err)
		return fmt.Errorf("creating %T %s: %w", obj, klog.KObj(obj), err)
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "Created", "Create", "Created %s %s", kindOf(obj), klog.KObj(obj))
	return nil
}

func kindOf(obj ctrlclient.Object) string {
	if _, ok := obj.(*corev1.Namespace); ok {
		return "namespace"
	}
	return "PackageBundleController"
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

// labels mark an object as belonging to Cluster c.
func labels(c *flotillav1.Cluster) map[string]string {
	return map[string]string{
		packagesv1.ClusterNameLabel:      c.Name,
		packagesv1.ClusterNamespaceLabel: c.Namespace,
	}
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
