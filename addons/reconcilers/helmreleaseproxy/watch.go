package helmreleaseproxy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/flotilla-dev/flotilla/addons/desired"
	"github.com/flotilla-dev/flotilla/addons/drift"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// clusterWatcher is implemented by CAPI's clustercache: it adds a watch on a workload cluster,
// once per connection for each watcher name, and drops them all when the connection is lost.
type clusterWatcher interface {
	Watch(ctx context.Context, cluster ctrlclient.ObjectKey, watcher clustercache.Watcher) error
}

// releaseIndex indexes HelmReleaseProxies by the releases they stand for in their cluster, as
// releaseKey(cluster, namespace, name): the one the spec names and the one last installed.
const releaseIndex = "addons.flotilla.dev/release"

func releaseKey(cluster, namespace, name string) string {
	return cluster + "/" + namespace + "/" + name
}

// indexRelease is the releaseIndex function.
func indexRelease(obj ctrlclient.Object) []string {
	hrp, ok := obj.(*addonsv1.HelmReleaseProxy)
	if !ok {
		return nil
	}
	keys := []string{releaseKey(hrp.Spec.ClusterName, desired.ReleaseNamespace(hrp), hrp.Spec.ReleaseName)}
	if inst := hrp.Status.Installed; inst != nil {
		if k := releaseKey(hrp.Spec.ClusterName, inst.Namespace, inst.ReleaseName); k != keys[0] {
			keys = append(keys, k)
		}
	}
	return keys
}

// watchSyncTimeout bounds the wait for a new watch's first list.
const watchSyncTimeout = 10 * time.Second

// watchRelease makes sure the events of the installed release's objects reach this controller:
// one metadata-only watch per kind and workload cluster, shared by every release there. It
// watches every kind of the release when drift correction is on, else only its workloads
// (their availability gates rollouts). It records in the scope whether the release is watched;
// a release that is not is polled instead (requeueAfter).
//
// It runs on every reconcile that knows the release's objects: CAPI's ClusterCache adds a watch
// once per connection and forgets them when it reconnects, so the watches come back with the
// first reconcile after a reconnect (the cluster source triggers one). A watch this reconcile
// added is waited for until its informer has listed the kind: what changes after that is an
// event, what changed before it is what this reconcile compares (s.newWatch).
func (r *Reconciler) watchRelease(ctx context.Context, s *scope) {
	if !s.objectsKnown {
		return
	}
	cw, ok := r.ClusterCache.(clusterWatcher)
	if !ok || r.controller == nil {
		return
	}
	cluster := ctrlclient.ObjectKeyFromObject(s.cluster)
	var errs []error
	for _, gvk := range watchedKinds(s.objects, driftEnabled(s.hrp)) {
		w := r.releaseObjectWatcher(cluster, gvk)
		if err := cw.Watch(ctx, cluster, w); err != nil {
			errs = append(errs, err)
			continue
		}
		if w.cache == nil {
			continue // added before, on this connection
		}
		s.newWatch = true
		if err := w.waitForSync(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		// Polling takes over until the watches are there: nothing is lost, only requests.
		ctrl.LoggerFrom(ctx).V(2).Info("Polling the release: its objects cannot be watched", "reason", err.Error())
		return
	}
	s.watched = true
}

// watchedKinds lists, once each, the kinds of objects to watch: all of them when drift
// correction is on, else the workloads.
func watchedKinds(objects []*unstructured.Unstructured, all bool) []schema.GroupVersionKind {
	var kinds []schema.GroupVersionKind
	seen := map[schema.GroupVersionKind]bool{}
	for _, o := range objects {
		gvk := o.GroupVersionKind()
		if seen[gvk] || (!all && !drift.IsWorkload(gvk)) {
			continue
		}
		seen[gvk] = true
		kinds = append(kinds, gvk)
	}
	return kinds
}

// releaseObjectWatcher watches the objects of kind gvk in cluster, metadata only: the
// annotations say which release an object belongs to, and the reconcile reads what it
// compares. The name makes the watch one per controller, kind and connection.
func (r *Reconciler) releaseObjectWatcher(cluster ctrlclient.ObjectKey, gvk schema.GroupVersionKind) *objectWatcher {
	kind := &metav1.PartialObjectMetadata{}
	kind.SetGroupVersionKind(gvk)
	return &objectWatcher{
		name:       "helmreleaseproxy-" + strings.ToLower(gvk.Kind) + "." + gvk.Version + "." + gvk.Group,
		kind:       kind,
		controller: r.controller,
		handler:    &releaseObjectEvents{reader: r.Client, cluster: cluster, workload: drift.IsWorkload(gvk)},
	}
}

// objectWatcher is a clustercache.Watcher (clustercache.NewWatcher's, metadata-only) that keeps
// the cache it was added to, so the reconcile that added it can wait for the first list.
type objectWatcher struct {
	name       string
	kind       *metav1.PartialObjectMetadata
	controller controller.Controller
	handler    *releaseObjectEvents

	// cache is the workload cluster's cache, set when the ClusterCache added the watch.
	cache ctrlcache.Cache
}

var _ clustercache.Watcher = &objectWatcher{}

func (w *objectWatcher) Name() string              { return w.name }
func (w *objectWatcher) Object() ctrlclient.Object { return w.kind }

// Watch adds the watch to the controller; the ClusterCache calls it once per connection.
func (w *objectWatcher) Watch(c ctrlcache.Cache) error {
	w.handler.started = time.Now()
	if err := w.controller.Watch(source.TypedKind[*metav1.PartialObjectMetadata, reconcile.Request](c, w.kind, w.handler)); err != nil {
		return err
	}
	w.cache = c
	return nil
}

// waitForSync waits until the watch's informer has listed its kind, at most watchSyncTimeout.
func (w *objectWatcher) waitForSync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, watchSyncTimeout)
	defer cancel()
	informer, err := w.cache.GetInformer(ctx, w.kind, ctrlcache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("watching %s: %w", w.kind.Kind, err)
	}
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("watching %s: the first list did not complete within %s", w.kind.Kind, watchSyncTimeout)
	}
	return nil
}

// releaseObjectEvents turns events of the objects of releases in one workload cluster into
// reconciles of the HelmReleaseProxies those releases belong to. Which ones it wakes depends on
// the event, so that a busy cluster does not keep the reconciler busy:
//
//   - a deletion, or a change of what a manifest sets (the spec, which bumps metadata.generation,
//     any change of an object without a generation such as a ConfigMap, labels, annotations):
//     the releases with drift correction on, which restore the object; for workloads also
//     those waiting for them to become available;
//   - a status change of a workload (same generation), and a workload the watch's first list
//     found: only the releases waiting for their workloads to become available (Healthy not
//     True for their generation), which a rollout's health gate needs; the status of available
//     workloads changes often and says nothing a release needs;
//   - a creation after the watch started: nothing (the reconciler created the object);
//   - the informer's periodic resync (the same resourceVersion): nothing.
type releaseObjectEvents struct {
	reader   ctrlclient.Reader
	cluster  ctrlclient.ObjectKey
	workload bool
	// started is when the watch was added.
	started time.Time
}

var _ handler.TypedEventHandler[*metav1.PartialObjectMetadata, reconcile.Request] = &releaseObjectEvents{}

// wake says which HelmReleaseProxies an event concerns.
type wake struct {
	drift  bool // the releases with drift correction on
	health bool // the releases waiting for their workloads
}

// Create tells only of workloads that may have existed before the watch: the informer's first
// list replays them as creations, and one may have become available between a release's last
// look and that list. A workload created later was created by the reconciler itself (an
// install, a restoration), which looks at it right after.
func (e *releaseObjectEvents) Create(ctx context.Context, ev event.TypedCreateEvent[*metav1.PartialObjectMetadata], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	// creationTimestamp has a resolution of a second.
	if ev.Object.CreationTimestamp.After(e.started.Add(time.Second)) {
		return
	}
	e.enqueue(ctx, q, ev.Object, wake{health: e.workload})
}

func (e *releaseObjectEvents) Update(ctx context.Context, ev event.TypedUpdateEvent[*metav1.PartialObjectMetadata], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	oldObj, newObj := ev.ObjectOld, ev.ObjectNew
	if oldObj.ResourceVersion == newObj.ResourceVersion {
		return
	}
	w := wake{health: e.workload}
	if contentChanged(oldObj, newObj) {
		w.drift = true
	}
	obj := newObj
	if _, ok := newObj.Annotations[drift.ReleaseNameAnnotation]; !ok {
		obj = oldObj // someone took Helm's marks away: the release they named is told
	}
	e.enqueue(ctx, q, obj, w)
}

func (e *releaseObjectEvents) Delete(ctx context.Context, ev event.TypedDeleteEvent[*metav1.PartialObjectMetadata], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	e.enqueue(ctx, q, ev.Object, wake{drift: true, health: e.workload})
}

func (e *releaseObjectEvents) Generic(context.Context, event.TypedGenericEvent[*metav1.PartialObjectMetadata], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

// contentChanged: the update may have changed what a manifest sets. Objects with a
// metadata.generation bump it on every change of their spec, not of their status; for the
// others (ConfigMaps, Secrets, ...) any change may be one.
func contentChanged(oldObj, newObj *metav1.PartialObjectMetadata) bool {
	return newObj.Generation == 0 || newObj.Generation != oldObj.Generation ||
		!newObj.DeletionTimestamp.Equal(oldObj.DeletionTimestamp) ||
		!maps.Equal(newObj.Labels, oldObj.Labels) || !maps.Equal(newObj.Annotations, oldObj.Annotations)
}

// enqueue adds the HelmReleaseProxies of obj's release in this cluster that w wakes.
func (e *releaseObjectEvents) enqueue(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], obj *metav1.PartialObjectMetadata, w wake) {
	name, namespace := obj.Annotations[drift.ReleaseNameAnnotation], obj.Annotations[drift.ReleaseNamespaceAnnotation]
	if name == "" || namespace == "" || (!w.drift && !w.health) {
		return
	}
	list := &addonsv1.HelmReleaseProxyList{}
	if err := e.reader.List(ctx, list, ctrlclient.InNamespace(e.cluster.Namespace),
		ctrlclient.MatchingFields{releaseIndex: releaseKey(e.cluster.Name, namespace, name)}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing the HelmReleaseProxies of a release", "cluster", e.cluster.String(), "release", namespace+"/"+name)
		return
	}
	for i := range list.Items {
		hrp := &list.Items[i]
		if (w.drift && driftEnabled(hrp)) || (w.health && waitingForWorkloads(hrp)) {
			q.Add(reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(hrp)})
		}
	}
}

// waitingForWorkloads: the release's workloads were not known to be available at its current
// generation.
func waitingForWorkloads(hrp *addonsv1.HelmReleaseProxy) bool {
	c := meta.FindStatusCondition(hrp.Status.Conditions, addonsv1.HealthyCondition)
	return c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != hrp.Generation
}
