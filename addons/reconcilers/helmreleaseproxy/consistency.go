package helmreleaseproxy

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// staleCacheRetry is how soon a reconcile that found the cache behind its own last write tries
// again.
const staleCacheRetry = 100 * time.Millisecond

// writes remembers the resourceVersion of the last write the reconciler made to each
// HelmReleaseProxy, so that the next reconcile does not act on a cached copy that predates it
// (as CAPI's controller wrapper defers reconciles until the cache is up to date). A reconcile
// comes right after the previous one when the release's own objects changed (an install does
// that): one that read the status from before the install would install again with a stale
// status and record, say, the revision before the upgrade as 0, which a rollback then misses.
type writes struct {
	mu   sync.Mutex
	last map[types.NamespacedName]written
}

type written struct {
	uid             types.UID
	resourceVersion string
}

// wrote records obj as the reconciler wrote it.
func (w *writes) wrote(obj ctrlclient.Object) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last == nil {
		w.last = map[types.NamespacedName]written{}
	}
	w.last[ctrlclient.ObjectKeyFromObject(obj)] = written{uid: obj.GetUID(), resourceVersion: obj.GetResourceVersion()}
}

// forget drops what is known of key: the object is gone.
func (w *writes) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.last, key)
}

// stale reports whether obj, as read from the cache, predates the reconciler's last write to it.
func (w *writes) stale(obj ctrlclient.Object) bool {
	w.mu.Lock()
	last, ok := w.last[ctrlclient.ObjectKeyFromObject(obj)]
	w.mu.Unlock()
	if !ok || last.uid != obj.GetUID() {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), last.resourceVersion)
	return err == nil && cmp < 0
}
