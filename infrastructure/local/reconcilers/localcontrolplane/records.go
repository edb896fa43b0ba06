package localcontrolplane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
)

// recordsPollInterval is how often the process records of every local control plane are looked
// at for changes.
const recordsPollInterval = 2 * time.Second

// watchRecords is a source of reconcile requests: every recordsPollInterval it looks at the
// modification times of the process records in Home/clusters/*/run, which change when a process
// starts, or when the supervisor of the home notices an exit, and enqueues the
// LocalControlPlanes of the clusters whose records changed. Their conditions and events then
// follow the supervisor within seconds rather than at the next health check. (A poll costs a
// directory listing per cluster; inotify would cost instances of the 128 a Linux user has.)
func (r *Reconciler) watchRecords(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	go func() {
		last := map[string]time.Time{}
		ticker := time.NewTicker(recordsPollInterval)
		defer ticker.Stop()
		for first := true; ; first = false {
			for cluster, changed := range latestRecordChanges(r.Home) {
				if !first && !changed.Equal(last[cluster]) {
					r.enqueueCluster(ctx, queue, cluster)
				}
				last[cluster] = changed
			}
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return nil
}

// latestRecordChanges returns, per cluster directory under home, the modification time of its
// most recently written process record.
func latestRecordChanges(home string) map[string]time.Time {
	runDirs, _ := filepath.Glob(filepath.Join(controlplane.ClusterDir(home, "*"), "run"))
	out := make(map[string]time.Time, len(runDirs))
	for _, dir := range runDirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		var latest time.Time
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			if info, err := e.Info(); err == nil && info.ModTime().After(latest) {
				latest = info.ModTime()
			}
		}
		out[filepath.Base(filepath.Dir(dir))] = latest
	}
	return out
}

// enqueueCluster enqueues the LocalControlPlanes of the clusters named cluster.
func (r *Reconciler) enqueueCluster(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request], cluster string) {
	list := &controlplanev1.LocalControlPlaneList{}
	if err := r.Client.List(ctx, list, ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: cluster}); err != nil {
		ctrl.LoggerFrom(ctx).V(4).Info("Listing the LocalControlPlanes of a cluster whose processes changed", "cluster", cluster, "error", err.Error())
		return
	}
	for _, lcp := range list.Items {
		queue.Add(reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(&lcp)})
	}
}
