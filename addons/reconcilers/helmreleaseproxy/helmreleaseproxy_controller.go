package helmreleaseproxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-dev/flotilla/addons/drift"
	"github.com/flotilla-dev/flotilla/addons/engine"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/background"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// FieldOwner is the field manager of everything the reconciler writes.
const FieldOwner = "flotilla-helmreleaseproxy-controller"

// Defaults of the Reconciler's tunables.
const (
	// DefaultResyncInterval is how often a Ready release is checked again.
	DefaultResyncInterval = 10 * time.Minute
	// unreachableRetry is how soon an unreachable cluster is tried again.
	unreachableRetry = 15 * time.Second
)

// RESTConfigGetter returns a REST config for a workload cluster, named by its CAPI Cluster.
// CAPI's clustercache.ClusterCache satisfies it; its error wraps clustercache.ErrClusterNotConnected
// while the cluster is not reachable.
type RESTConfigGetter interface {
	GetRESTConfig(ctx context.Context, cluster ctrlclient.ObjectKey) (*rest.Config, error)
}

// clusterSourcer is implemented by CAPI's clustercache: a source of events when the cache
// connects to or disconnects from a workload cluster.
type clusterSourcer interface {
	GetClusterSource(controllerName string, mapFunc func(ctx context.Context, cluster ctrlclient.Object) []ctrl.Request, opts ...clustercache.GetClusterSourceOption) source.Source
}

// +kubebuilder:rbac:groups=addons.flotilla.dev,resources=helmreleaseproxies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=addons.flotilla.dev,resources=helmreleaseproxies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler installs the release of a HelmReleaseProxy into its workload cluster.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client ctrlclient.Client
	// APIReader reads ConfigMaps and Secrets (valuesFrom, registry credentials) without caching
	// every Secret of the management cluster.
	APIReader ctrlclient.Reader
	// Engine performs the Helm actions.
	Engine engine.Engine
	// ClusterCache hands out REST configs of workload clusters.
	ClusterCache RESTConfigGetter
	// Recorder records Events on HelmReleaseProxies.
	Recorder events.EventRecorder
	// Drift compares and restores the live objects of releases with drift correction enabled.
	Drift *drift.Checker

	// UninstallTimeout bounds the tries of an uninstall: from the Flotilla Cluster's deletion
	// for uninstallOnClusterDelete Ensure, from the HelmReleaseProxy's for one deleted alone;
	// predelete.DefaultUninstallTimeout (5 minutes) when 0.
	UninstallTimeout time.Duration
	// ResyncInterval is how often a Ready release is checked again; 0 means
	// DefaultResyncInterval.
	ResyncInterval time.Duration
	// MaxConcurrentReconciles bounds how many HelmReleaseProxies reconcile at once; 0 means 10.
	MaxConcurrentReconciles int

	// now is the clock; time.Now when nil.
	now func() time.Time
	// writes keeps the reconciler from acting on a cached copy older than its own last write.
	writes writes
	// controller is the controller SetupWithManager built, which the watches of workload
	// clusters feed.
	controller controller.Controller
	// calls runs installs, upgrades and uninstalls beside the workers (no head-of-line
	// blocking).
	calls background.Runner
}

// SetupWithManager registers the reconciler with mgr. It reconciles HelmReleaseProxies and
// watches Clusters, so a Cluster that appears or is paused or resumed is noticed at once. The
// objects of installed releases are watched in their workload clusters as releases need it
// (watchRelease), when the ClusterCache can watch.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("helmreleaseproxy reconciler: Client is required")
	case r.APIReader == nil:
		return errors.New("helmreleaseproxy reconciler: APIReader is required")
	case r.Engine == nil:
		return errors.New("helmreleaseproxy reconciler: Engine is required")
	case r.ClusterCache == nil:
		return errors.New("helmreleaseproxy reconciler: ClusterCache is required")
	case r.Recorder == nil:
		return errors.New("helmreleaseproxy reconciler: Recorder is required")
	case r.Drift == nil:
		return errors.New("helmreleaseproxy reconciler: Drift is required")
	}
	if r.ResyncInterval <= 0 {
		r.ResyncInterval = DefaultResyncInterval
	}
	if r.now == nil {
		r.now = time.Now
	}
	concurrency := r.MaxConcurrentReconciles
	if concurrency <= 0 {
		concurrency = 10
	}
	registerMetrics(r.Client)
	if err := mgr.GetFieldIndexer().IndexField(ctx, &addonsv1.HelmReleaseProxy{}, releaseIndex, indexRelease); err != nil {
		return fmt.Errorf("indexing HelmReleaseProxies by release: %w", err)
	}
	changed := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	b := ctrl.NewControllerManagedBy(mgr).
		Named("helmreleaseproxy").
		For(&addonsv1.HelmReleaseProxy{}, builder.WithPredicates(changed)).
		Watches(&clusterv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.proxiesOfCluster), builder.WithPredicates(changed)).
		// A release that becomes Ready lets the releases depending on it in its cluster install;
		// one that is uninstalled lets those it depends on uninstall.
		Watches(&addonsv1.HelmReleaseProxy{}, handler.EnqueueRequestsFromMapFunc(r.related)).
		// A tenant's change of her values upgrades the releases they are for at once. Metadata
		// only: every change bumps the resourceVersion, and the values are read from the API
		// server. Tenant values Secrets are not watched (listing or watching Secrets is no right
		// of this component): theirs apply at the next resync, or with a ConfigMap's change.
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.releasesOfTenantValues), builder.OnlyMetadata,
			builder.WithPredicates(tenantValues)).
		// Helm actions end in the background: their end brings their HelmReleaseProxy back.
		WatchesRawSource(r.calls.Source()).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency, RateLimiter: background.RateLimiter()})
	if cs, ok := r.ClusterCache.(clusterSourcer); ok {
		// A cluster the cache (re)connects to is installed into at once, not at the next retry.
		b = b.WatchesRawSource(cs.GetClusterSource("helmreleaseproxy", r.proxiesOfCluster))
	}
	c, err := b.Build(r)
	if err != nil {
		return fmt.Errorf("setting up the helmreleaseproxy reconciler: %w", err)
	}
	r.controller = c
	return nil
}

// Reconcile installs, upgrades or uninstalls one release and records what it found.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	hrp := &addonsv1.HelmReleaseProxy{}
	if err := r.Client.Get(ctx, req.NamespacedName, hrp); err != nil {
		if apierrors.IsNotFound(err) {
			r.writes.forget(req.NamespacedName)
			r.calls.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if r.writes.stale(hrp) {
		return ctrl.Result{RequeueAfter: staleCacheRetry}, nil // the cache has not seen our last write yet
	}
	ctx = ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("cluster", hrp.Spec.ClusterName))

	s := &scope{hrp: hrp, patch: objectpatch.New(r.Client, hrp)}
	defer func() {
		if err := r.patchStatus(ctx, s); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()

	if !hrp.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, s)
	}
	added, err := s.patch.EnsureFinalizer(ctx, addonsv1.HelmReleaseProxyFinalizer)
	if err != nil {
		return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
	}
	if added {
		r.writes.wrote(hrp)
	}
	return r.reconcileNormal(ctx, s)
}

// scope holds what one reconcile learns about a HelmReleaseProxy; setStatus turns it into status.
type scope struct {
	hrp *addonsv1.HelmReleaseProxy
	// patch writes the HelmReleaseProxy back: its finalizer and its status.
	patch *objectpatch.Patch

	// cluster is the CAPI Cluster; nil when it does not exist.
	cluster *clusterv1.Cluster
	// paused is set when the HelmReleaseProxy or its Cluster is paused.
	paused bool
	// notReady, when set, is why the release is not Ready: a reason and a message.
	notReady *notReady
	// busy is set while Helm works in the background on a release that is as the spec says (a
	// resync): its Ready condition stays as it was.
	busy bool
	// deleting is set while the HelmReleaseProxy is being deleted.
	deleting bool
	// orphaned holds the last error when the release was left in an unreachable cluster.
	orphaned error
	// gone is set once the finalizer is removed: there is no status left to write.
	gone bool

	// objects are the objects of the installed release's manifest, known when objectsKnown.
	objects      []*unstructured.Unstructured
	objectsKnown bool
	// watched is set when the events of the release's objects reach the reconciler (watchRelease):
	// it need not poll them.
	watched bool
	// newWatch is set when this reconcile added a watch: a change made before its first list
	// was no event, so the objects are compared now.
	newWatch bool
	// driftChecked is set when the live objects were compared with the manifest.
	driftChecked bool
	// driftErr is why the comparison or a restoration failed.
	driftErr error
	// healthChecked is set when the workloads were looked at; unavailable names those that are
	// not available, healthErr is why they could not be read.
	healthChecked bool
	unavailable   []string
	healthErr     error
}

type notReady struct{ reason, message string }

// fail records why the release is not Ready.
func (s *scope) fail(reason, format string, args ...any) {
	s.notReady = &notReady{reason: reason, message: fmt.Sprintf(format, args...)}
}

// patchStatus computes the status from the scope and writes it when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	if s.gone {
		return nil
	}
	setStatus(s)
	if err := s.patch.Write(ctx); err != nil {
		return err
	}
	r.writes.wrote(s.hrp) // the resourceVersion of the write, or of the read when nothing changed
	return nil
}

// tenantValues keeps the ConfigMaps that hold tenant values, or held them before a change.
var tenantValues = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return isTenantValues(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return isTenantValues(e.ObjectOld) || isTenantValues(e.ObjectNew) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return isTenantValues(e.Object) },
	GenericFunc: func(e event.GenericEvent) bool { return isTenantValues(e.Object) },
}

func isTenantValues(obj ctrlclient.Object) bool {
	return obj.GetLabels()[addonsv1.TenantValuesLabel] != ""
}

// releasesOfTenantValues maps a ConfigMap of tenant values (values.FromTenants) to the
// HelmReleaseProxies that take them: those of the proxy it is for, in its namespace, with
// tenantValues, on its cluster when it names one.
func (r *Reconciler) releasesOfTenantValues(ctx context.Context, obj ctrlclient.Object) []reconcile.Request {
	proxy := obj.GetLabels()[addonsv1.TenantValuesLabel]
	if proxy == "" {
		return nil
	}
	selector := ctrlclient.MatchingLabels{addonsv1.HelmChartProxyNameLabel: proxy}
	if cluster := obj.GetLabels()[clusterv1.ClusterNameLabel]; cluster != "" {
		selector[clusterv1.ClusterNameLabel] = cluster
	}
	list := &addonsv1.HelmReleaseProxyList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(obj.GetNamespace()), selector); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the HelmReleaseProxies of tenant values", "configMap", klog.KObj(obj))
		return nil
	}
	var requests []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Spec.TenantValues {
			requests = append(requests, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return requests
}

// proxiesOfCluster maps a Cluster to the HelmReleaseProxies installing into it, through the
// cluster.x-k8s.io/cluster-name label they carry.
func (r *Reconciler) proxiesOfCluster(ctx context.Context, obj ctrlclient.Object) []reconcile.Request {
	list := &addonsv1.HelmReleaseProxyList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(obj.GetNamespace()),
		ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: obj.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing HelmReleaseProxies of a Cluster", "cluster", klog.KObj(obj))
		return nil
	}
	requests := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		requests = append(requests, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(&list.Items[i])})
	}
	return requests
}
