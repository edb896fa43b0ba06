package client

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
)

// DeleteManagementClusterOptions says which local management cluster to delete.
type DeleteManagementClusterOptions struct {
	// Name of the management cluster.
	Name string
	// OutDir is where create wrote <name>/<name>.kubeconfig; that file is removed too.
	OutDir string
	// Force deletes the cluster even though it still manages workload clusters.
	Force bool
}

// DeleteManagementCluster stops every process of a local management cluster (its manager,
// its control plane, its bootstrap cluster if a failed create left one) and removes its data.
// When it was the last cluster of the home and no registry runs, the supervisor of the home is
// stopped too: nothing of Flotilla's is left running.
// A management cluster that still manages workload clusters is kept unless opts.Force is set.
func (c *Client) DeleteManagementCluster(ctx context.Context, opts DeleteManagementClusterOptions) error {
	if opts.OutDir == "" {
		opts.OutDir = "."
	}
	name, boot := opts.Name, bootstrapName(opts.Name)
	dirs := []string{}
	for _, n := range []string{name, boot} {
		if _, err := os.Stat(c.clusterDir(n)); err == nil {
			dirs = append(dirs, c.clusterDir(n))
		}
	}
	if len(dirs) == 0 {
		return fmt.Errorf("no cluster named %q on this machine (looked in %s); `flotilla get clusters` lists them",
			name, filepath.Join(c.Home, "clusters"))
	}
	workloads := c.managedWorkloadClusters(ctx, name)
	// The local workload clusters its manager ran, as their directories record it: also when
	// its API server does not answer (its processes stopped with the machine).
	local, err := c.localClustersManagedBy(name)
	if err != nil {
		return err
	}
	if (len(workloads) > 0 || len(local) > 0) && !opts.Force {
		names := make([]string, 0, len(workloads))
		for _, w := range workloads {
			names = append(names, w.Namespace+"/"+w.Name)
		}
		if len(names) == 0 {
			names = local
		}
		return fmt.Errorf("management cluster %q still manages workload clusters %s: delete them first with `flotilla delete cluster NAME --kubeconfig %s`, or pass --force",
			name, strings.Join(names, ", "), UserKubeconfigPath(opts.OutDir, name))
	}
	start := time.Now()
	for _, n := range []string{name, boot} {
		if err := c.stopManager(ctx, n); err != nil {
			return err
		}
	}
	// With --force, the local workload clusters go too: their processes were started by the
	// manager just stopped, and nothing would ever stop them otherwise.
	for _, w := range workloads {
		if w.Spec.DatacenterRef.Kind == flotillav1.LocalDatacenterConfigKind && !slices.Contains(local, w.Name) {
			local = append(local, w.Name)
		}
	}
	for _, w := range local {
		if _, err := os.Stat(c.clusterDir(w)); err == nil {
			dirs = append(dirs, c.clusterDir(w))
		}
		removeUserKubeconfig(opts.OutDir, w)
	}
	for _, dir := range dirs {
		fmt.Fprintf(c.Out, "Stopping the processes of %s and removing its data\n", filepath.Base(dir))
		if err := controlplane.Delete(ctx, dir); err != nil {
			return fmt.Errorf("deleting %s: %w", dir, err)
		}
	}
	removeUserKubeconfig(opts.OutDir, name)
	if err := c.stopIdleSupervisor(ctx); err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "Deleted cluster %q in %s\n", name, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// removeUserKubeconfig removes the kubeconfig create wrote for a deleted cluster, and its
// directory when that is empty (it may hold the user's own files, such as the spec).
func removeUserKubeconfig(outDir, name string) {
	kubeconfig := UserKubeconfigPath(outDir, name)
	_ = os.Remove(kubeconfig)
	_ = os.Remove(filepath.Dir(kubeconfig))
}

// localClustersManagedBy lists the local clusters of the home, other than name itself, whose
// control planes the manager of local management cluster name runs.
func (c *Client) localClustersManagedBy(name string) ([]string, error) {
	clusters, err := c.LocalClusters()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, cl := range clusters {
		if cl.ManagedBy == name && cl.Name != name {
			out = append(out, cl.Name)
		}
	}
	return out, nil
}

// managedWorkloadClusters lists the workload clusters the management cluster name manages. A
// management cluster that does not answer manages none that can be listed.
func (c *Client) managedWorkloadClusters(ctx context.Context, name string) []flotillav1.Cluster {
	kc, err := KubeClient(c.localKubeconfigPath(name))
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list := &flotillav1.ClusterList{}
	if err := kc.List(ctx, list); err != nil {
		return nil
	}
	var out []flotillav1.Cluster
	for _, cl := range list.Items {
		if cl.Name != name && !cl.Spec.Management {
			out = append(out, cl)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name
	})
	return out
}

// DeleteWorkloadClusterOptions says which workload cluster to delete, through which management
// cluster.
type DeleteWorkloadClusterOptions struct {
	Name, Namespace string
	// Kubeconfig is the management cluster's kubeconfig.
	Kubeconfig string
	// OutDir is where create wrote <name>/<name>.kubeconfig; that file is removed too.
	OutDir string
}

// DeleteWorkloadCluster deletes a workload cluster through its management cluster, whose
// controllers stop its machines and control plane, and waits until it is gone.
func (c *Client) DeleteWorkloadCluster(ctx context.Context, opts DeleteWorkloadClusterOptions) error {
	kc, err := KubeClient(opts.Kubeconfig)
	if err != nil {
		return err
	}
	if err := c.CheckCompatibility(ctx, kc, opts.Kubeconfig, Mutating); err != nil {
		return err
	}
	// Its finalizers need the management cluster's manager.
	stopWatch, err := c.ensureManagerOf(ctx, kc, opts.Kubeconfig, opts.Namespace)
	if err != nil {
		return err
	}
	defer stopWatch()
	fc := &flotillav1.Cluster{}
	if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: opts.Namespace, Name: opts.Name}, fc); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster %q not found in namespace %q; `flotilla get clusters --kubeconfig %s` lists them", opts.Name, opts.Namespace, opts.Kubeconfig)
		}
		return fmt.Errorf("reading cluster %q: %w", opts.Name, err)
	}
	if fc.Spec.Management {
		return fmt.Errorf("cluster %q is a management cluster: delete it without --kubeconfig (`flotilla delete cluster %s`)", opts.Name, opts.Name)
	}
	// Out of Git first, so the management cluster cannot apply the spec again.
	if err := c.removeClusterSpec(ctx, kc, fc); err != nil {
		return err
	}
	start := time.Now()
	events := newTeardownEvents(ctx, kc, fc, start)
	if err := kc.Delete(ctx, fc); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting cluster %q: %w", opts.Name, err)
	}
	fmt.Fprintf(c.Out, "Deleting cluster %q: its addons and packages are uninstalled first, then its machines and control plane go\n", opts.Name)
	// What the teardown waits for, each time it changes, and what it did: the addons and
	// packages uninstalled while the API server still answers, then the machines and the
	// control plane.
	var said string
	err = poll(ctx, time.Second, c.WaitTimeout, func(ctx context.Context) (bool, error) {
		current := &flotillav1.Cluster{}
		err := kc.Get(ctx, ctrlclient.ObjectKeyFromObject(fc), current)
		events.print(ctx, c.Out)
		if ready := meta.FindStatusCondition(current.Status.Conditions, flotillav1.ReadyCondition); err == nil && ready != nil &&
			ready.Reason == flotillav1.DeletingReason && ready.Message != said {
			said = ready.Message
			fmt.Fprintf(c.Out, "  %s\n", said)
		}
		return apierrors.IsNotFound(err), nil
	}, func() error {
		return fmt.Errorf("cluster %q is still being deleted after %s; see `flotilla describe cluster %s --kubeconfig %s`",
			opts.Name, c.WaitTimeout, opts.Name, opts.Kubeconfig)
	})
	events.print(ctx, c.Out) // the control plane's last words come as the Cluster goes
	if err != nil {
		return err
	}
	removeUserKubeconfig(opts.OutDir, opts.Name)
	fmt.Fprintf(c.Out, "Deleted cluster %q in %s\n", opts.Name, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// teardownEvents finds the events of a workload cluster's teardown, in its namespace: those of
// its Flotilla Cluster (packages uninstalled, the CAPI Cluster deleted), those related to its
// CAPI Cluster (addon releases uninstalled) and those of its control plane (stopped).
type teardownEvents struct {
	kc        ctrlclient.Client
	namespace string
	// cluster and capiCluster are the UIDs of the Flotilla and the CAPI Cluster.
	cluster, capiCluster types.UID
	controlPlane         clusterv1.ContractVersionedObjectReference
	// since is when the teardown began, by this machine's clock: what happened before is not
	// the teardown's.
	since time.Time
	// seen holds the events printed. An event that happens again (its series grows) is not
	// printed again.
	seen map[types.UID]bool
}

// newTeardownEvents finds the events of fc's teardown, which began at since.
func newTeardownEvents(ctx context.Context, kc ctrlclient.Client, fc *flotillav1.Cluster, since time.Time) *teardownEvents {
	t := &teardownEvents{kc: kc, namespace: fc.Namespace, cluster: fc.UID, since: since, seen: map[types.UID]bool{}}
	capi := &clusterv1.Cluster{}
	if err := kc.Get(ctx, ctrlclient.ObjectKeyFromObject(fc), capi); err == nil {
		t.capiCluster, t.controlPlane = capi.UID, capi.Spec.ControlPlaneRef
	}
	return t
}

// next returns the teardown's events that were not returned before, oldest first (by when
// they last happened). Reading them is best effort (a user who may not list events still sees
// the Cluster's conditions): an error returns none.
func (t *teardownEvents) next(ctx context.Context) []eventsv1.Event {
	list := &eventsv1.EventList{}
	if err := t.kc.List(ctx, list, ctrlclient.InNamespace(t.namespace)); err != nil {
		return nil
	}
	var found []eventsv1.Event
	for _, e := range list.Items {
		if t.seen[e.UID] || !happenedSince(e, t.since) || !t.concerns(&e) {
			continue
		}
		t.seen[e.UID] = true
		found = append(found, e)
	}
	sort.SliceStable(found, func(i, j int) bool { return eventTime(found[i]).Before(eventTime(found[j])) })
	return found
}

// print writes the teardown's new events to out, a line each.
func (t *teardownEvents) print(ctx context.Context, out io.Writer) {
	for _, e := range t.next(ctx) {
		fmt.Fprintf(out, "  %s  %s %s: %s\n", eventTime(e).Local().Format("15:04:05.000"), e.Regarding.Kind, e.Regarding.Name, e.Note)
	}
}

// concerns reports whether e is about the cluster's teardown.
func (t *teardownEvents) concerns(e *eventsv1.Event) bool {
	switch {
	case e.Regarding.UID == t.cluster:
		return true
	case t.capiCluster != "" && e.Related != nil && e.Related.UID == t.capiCluster:
		return true
	}
	return t.controlPlane.IsDefined() && e.Regarding.Kind == t.controlPlane.Kind && e.Regarding.Name == t.controlPlane.Name
}

// happenedSince reports whether e last happened at since or later, to the precision its API
// records: the core API's timestamps are whole seconds.
func happenedSince(e eventsv1.Event, since time.Time) bool {
	if e.Series == nil && e.EventTime.IsZero() {
		since = since.Truncate(time.Second)
	}
	return !eventTime(e).Before(since)
}

// eventTime is when e last happened, whichever API wrote it.
func eventTime(e eventsv1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.DeprecatedLastTimestamp.Time
}
