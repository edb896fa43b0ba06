package clusterteardown

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
	"github.com/flotilla-dev/flotilla/pkg/predelete"
)

// PreDeleteHook names the addons component's pre-delete hook on Clusters.
const PreDeleteHook = "addons"

// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=addons.flotilla.dev,resources=helmreleaseproxies,verbs=get;list;watch

// Reconciler sets and removes the addons pre-delete hook of Flotilla Clusters.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client ctrlclient.Client
}

// SetupWithManager registers the reconciler with mgr. It watches Flotilla Clusters, and the
// HelmReleaseProxies whose going lets a deleted Cluster's teardown go on.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		return errors.New("addons cluster teardown reconciler: Client is required")
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("addons-cluster-teardown").
		For(&flotillav1.Cluster{}).
		Watches(&addonsv1.HelmReleaseProxy{}, handler.EnqueueRequestsFromMapFunc(clusterOfReleaseProxy)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the addons cluster teardown reconciler: %w", err)
	}
	return nil
}

// Reconcile sets the hook on a Cluster, or removes it from a deleted one whose releases are
// uninstalled (no HelmReleaseProxy names it any more).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	c := &flotillav1.Cluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if c.DeletionTimestamp.IsZero() {
		err := predelete.Ensure(ctx, r.Client, c, PreDeleteHook)
		return objectpatch.RequeueOnConflict(ctrlclient.IgnoreNotFound(err), objectpatch.ConflictRetry)
	}
	list := &addonsv1.HelmReleaseProxyList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(c.Namespace), ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: c.Name}); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing the HelmReleaseProxies of Cluster %s: %w", klog.KObj(c), err)
	}
	if len(list.Items) > 0 {
		return ctrl.Result{}, nil // their deletion brings the Cluster back
	}
	err := predelete.Release(ctx, r.Client, c, PreDeleteHook)
	return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
}

// clusterOfReleaseProxy maps a HelmReleaseProxy to the Flotilla Cluster of its CAPI Cluster
// (same namespace and name).
func clusterOfReleaseProxy(_ context.Context, obj ctrlclient.Object) []reconcile.Request {
	hrp, ok := obj.(*addonsv1.HelmReleaseProxy)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ctrlclient.ObjectKey{Namespace: hrp.Namespace, Name: hrp.Spec.ClusterName}}}
}
