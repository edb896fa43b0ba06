package helmchartproxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// FieldOwner is the server-side apply field manager of the HelmReleaseProxies the reconciler
// writes.
const FieldOwner = "flotilla-helmchartproxy-controller"

const (
	// DefaultResyncInterval is how often a proxy is rendered again although nothing it watches
	// changed (the control plane and infrastructure objects its template may read are not
	// watched).
	DefaultResyncInterval = 10 * time.Minute
	// conflictRetry is how soon a reconcile that lost an optimistic-lock race tries again. The
	// usual loser read the proxy from a cache that had not yet seen the proxy's last status
	// write (its HelmReleaseProxies change in bursts), which it sees milliseconds later; waiting
	// a second made a fleet's proxy Ready a second after its last release.
	conflictRetry = 100 * time.Millisecond
)

// +kubebuilder:rbac:groups=addons.flotilla.dev,resources=helmchartproxies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=addons.flotilla.dev,resources=helmchartproxies/status;helmchartproxies/finalizers,verbs=get;update;patch
// +kubebuilder:rbac:groups=addons.flotilla.dev,resources=helmreleaseproxies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=controlplane.flotilla.dev;controlplane.cluster.x-k8s.io;infrastructure.flotilla.dev;infrastructure.cluster.x-k8s.io,resources=*,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler keeps one HelmReleaseProxy per Cluster a HelmChartProxy selects.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client ctrlclient.Client
	// Recorder records Events on HelmChartProxies.
	Recorder events.EventRecorder
	// ResyncInterval is how often a proxy is rendered again unprompted; 0 means
	// DefaultResyncInterval.
	ResyncInterval time.Duration
	// MaxConcurrentReconciles bounds how many proxies reconcile at once; 0 means 4.
	MaxConcurrentReconciles int

	// now is the clock; time.Now when nil.
	now func() time.Time
}

// SetupWithManager registers the reconciler with mgr. It reconciles HelmChartProxies, watches the
// HelmReleaseProxies they own (for status) and Clusters (a new, relabelled, paused or deleted
// Cluster changes the selection of every proxy in its namespace).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("helmchartproxy reconciler: Client is required")
	case r.Recorder == nil:
		return errors.New("helmchartproxy reconciler: Recorder is required")
	}
	if r.ResyncInterval <= 0 {
		r.ResyncInterval = DefaultResyncInterval
	}
	if r.now == nil {
		r.now = time.Now
	}
	registerMetrics(r.Client)
	concurrency := r.MaxConcurrentReconciles
	if concurrency <= 0 {
		concurrency = 4
	}
	clusterChanged := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("helmchartproxy").
		For(&addonsv1.HelmChartProxy{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&addonsv1.HelmReleaseProxy{}).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.proxiesInNamespace), builder.WithPredicates(clusterChanged)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the helmchartproxy reconciler: %w", err)
	}
	return nil
}

// Reconcile fans one HelmChartProxy out to the clusters it selects.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, reterr error) {
	hcp := &addonsv1.HelmChartProxy{}
	if err := r.Client.Get(ctx, req.NamespacedName, hcp); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	s := &scope{proxy: hcp, patch: objectpatch.New(r.Client, hcp), renderErrors: map[string]error{}, requeueAfter: r.ResyncInterval}
	defer func() {
		if err := r.patchStatus(ctx, s); err != nil {
			if apierrors.IsConflict(err) && reterr == nil {
				result = ctrl.Result{RequeueAfter: conflictRetry} // worked from an outdated proxy
				return
			}
			reterr = errors.Join(reterr, err)
		}
	}()

	if !hcp.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	if _, err := s.patch.EnsureFinalizer(ctx, addonsv1.HelmChartProxyFinalizer); err != nil {
		return objectpatch.RequeueOnConflict(err, conflictRetry)
	}
	if _, paused := hcp.Annotations[clusterv1.PausedAnnotation]; paused {
		s.paused = true
		return ctrl.Result{}, nil
	}

	phases := []func(context.Context, *scope) error{
		r.selectClusters,
		r.listReleaseProxies,
		r.applyReleaseProxies,
		r.deleteUnselected,
	}
	for _, phase := range phases {
		if err := phase(ctx, s); err != nil || s.invalid != nil {
			return objectpatch.RequeueOnConflict(err, conflictRetry)
		}
	}
	return ctrl.Result{RequeueAfter: min(r.ResyncInterval, s.requeueAfter)}, nil
}

// scope holds what one reconcile learns about a HelmChartProxy; setStatus turns it into status.
type scope struct {
	proxy *addonsv1.HelmChartProxy
	// patch writes the proxy back: its finalizer and its status.
	patch *objectpatch.Patch

	// invalid is set when the spec cannot be acted on (an invalid selector).
	invalid error
	// paused is set when the proxy carries the paused annotation.
	paused bool
	// deleting is set while the proxy is being deleted; remaining counts the HelmReleaseProxies
	// still there.
	deleting  bool
	remaining int
	// gone is set once the finalizer is removed.
	gone bool

	// clusters are the selected Clusters, by name; observed once selectClusters ran.
	clusters map[string]*clusterv1.Cluster
	observed bool
	// releaseProxies are the proxy's HelmReleaseProxies, by cluster name.
	releaseProxies map[string]*addonsv1.HelmReleaseProxy
	// renderErrors are the template errors, by cluster name.
	renderErrors map[string]error
	// requeueAfter is how soon the rollout needs to look again; 0 when it does not.
	requeueAfter time.Duration
}

// patchStatus computes the status from the scope and writes it when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if s.gone {
		return nil
	}
	setStatus(s)
	return r.persistStatus(ctx, s)
}

// persistStatus writes the status as it is in the scope now, when it changed, with an
// optimistic lock: the rollout's state must not be overwritten by a reconcile that read an
// older proxy.
func (r *Reconciler) persistStatus(ctx context.Context, s *scope) error {
	return s.patch.Write(ctx, objectpatch.WithOptimisticLock())
}

// proxiesInNamespace maps a Cluster to every HelmChartProxy of its namespace: any of them may
// select it now, or have selected it before.
func (r *Reconciler) proxiesInNamespace(ctx context.Context, obj ctrlclient.Object) []reconcile.Request {
	list := &addonsv1.HelmChartProxyList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing HelmChartProxies for a Cluster", "cluster", klog.KObj(obj))
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(&list.Items[i])})
	}
	return requests
}
