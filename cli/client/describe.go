package client

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/cluster-api/cmd/clusterctl/client/tree"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// DescribeCluster prints the tree of a cluster like `clusterctl describe cluster`: the Flotilla
// Cluster, its CAPI Cluster, infrastructure, control plane, machine deployments and machines, each
// with its Ready (or Available) condition.
func DescribeCluster(ctx context.Context, kc ctrlclient.Client, namespace, name string, w io.Writer) error {
	fc := &flotillav1.Cluster{}
	if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, fc); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster %q not found in namespace %q; `flotilla get clusters` lists them", name, namespace)
		}
		return fmt.Errorf("reading cluster %q: %w", name, err)
	}
	objTree, err := tree.Discovery(ctx, kc, namespace, name, tree.DiscoverOptions{
		ShowOtherConditions: "", Grouping: true, ShowMachineSets: false,
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("discovering the objects of cluster %q: %w", name, err)
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREADY\tREASON\tSINCE\tMESSAGE")
	ready := meta.FindStatusCondition(fc.Status.Conditions, flotillav1.ReadyCondition)
	printRow(tw, "", fmt.Sprintf("Cluster.%s/%s", flotillav1.GroupVersion.Group, name), ready)
	if objTree == nil {
		fmt.Fprintln(tw, "└─(no Cluster API objects yet)")
		return tw.Flush()
	}
	printTree(tw, objTree, objTree.GetRoot(), "", true)
	return tw.Flush()
}

// printTree prints obj and its children, prefix holding the tree's guide lines.
func printTree(w io.Writer, t *tree.ObjectTree, obj ctrlclient.Object, prefix string, last bool) {
	branch, childPrefix := "├─", prefix+"│ "
	if last {
		branch, childPrefix = "└─", prefix+"  "
	}
	printRow(w, prefix+branch, rowName(obj), rowCondition(obj))
	children := t.GetObjectsByParent(obj.GetUID())
	for i, child := range children {
		printTree(w, t, child, childPrefix, i == len(children)-1)
	}
}

func rowName(obj ctrlclient.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	var name string
	switch {
	case tree.IsGroupObject(obj):
		// A group node's kind is <Kind>Group, such as MachineGroup.
		items := strings.Split(tree.GetGroupItems(obj), tree.GroupItemsSeparator)
		name = fmt.Sprintf("%d %ss: %s", len(items), strings.TrimSuffix(kind, "Group"), tree.GetGroupItems(obj))
	case tree.IsVirtualObject(obj):
		name = obj.GetName()
	default:
		name = fmt.Sprintf("%s/%s", kind, obj.GetName())
	}
	if meta := tree.GetMetaName(obj); meta != "" {
		name = meta + " - " + name
	}
	return name
}

// rowCondition is the condition that best says whether obj is fine: Available for objects that
// have it (Cluster, control plane, MachineDeployment), else Ready.
func rowCondition(obj ctrlclient.Object) *metav1.Condition {
	if c := tree.GetAvailableCondition(obj); c != nil {
		return c
	}
	return tree.GetReadyCondition(obj)
}

func printRow(w io.Writer, prefix, name string, c *metav1.Condition) {
	if c == nil {
		fmt.Fprintf(w, "%s%s\t\t\t\t\n", prefix, name)
		return
	}
	since := duration.HumanDuration(time.Since(c.LastTransitionTime.Time))
	msg := strings.ReplaceAll(c.Message, "\n", "; ")
	fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%s\n", prefix, name, c.Status, c.Reason, since, msg)
}
