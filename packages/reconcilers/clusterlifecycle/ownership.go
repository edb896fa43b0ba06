package clusterlifecycle

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// ownership says whose a derived object (a Packages namespace, a PackageBundleController) is,
// from the labels it carries.
type ownership int

const (
	// absent: the object does not exist.
	absent ownership = iota
	// owned: it carries the Cluster's namespace, name and UID.
	owned
	// adoptable: it carries the Cluster's namespace and name, and another UID or none. An API
	// server holds one Cluster of a namespace and name at a time, so this is the Cluster itself
	// as it was before: created by an older Flotilla (no UID label), or before a clusterctl move
	// away and back (which releases the objects without deleting them, and gives the Cluster a
	// new UID). The reconciler writes the new UID on it.
	adoptable
	// foreign: it carries another Cluster's namespace, or no cluster labels at all. The
	// reconciler neither changes nor deletes it.
	foreign
)

// ownershipOf says whose obj is with respect to Cluster c; obj nil means absent.
func ownershipOf(c *flotillav1.Cluster, obj ctrlclient.Object) ownership {
	if obj == nil {
		return absent
	}
	l := obj.GetLabels()
	switch {
	case l[packagesv1.ClusterNamespaceLabel] != c.Namespace || l[packagesv1.ClusterNameLabel] != c.Name:
		return foreign
	case l[packagesv1.ClusterUIDLabel] != string(c.UID):
		return adoptable
	}
	return owned
}

// conflictMessage says why obj, found foreign to Cluster c, is left alone.
func conflictMessage(c *flotillav1.Cluster, obj ctrlclient.Object) string {
	l := obj.GetLabels()
	what := fmt.Sprintf("%s %s", kindOf(obj), klog.KObj(obj))
	if l[packagesv1.ClusterNamespaceLabel] == "" || l[packagesv1.ClusterNameLabel] == "" {
		return fmt.Sprintf("%s exists without the labels %s and %s, so it was not made for Cluster %s: "+
			"this Cluster leaves it alone and has no packages; an admin may delete it, or rename this Cluster",
			what, packagesv1.ClusterNamespaceLabel, packagesv1.ClusterNameLabel, klog.KObj(c))
	}
	return fmt.Sprintf("%s belongs to Cluster %s/%s (UID %s): cluster names are unique in a management cluster, "+
		"and this Cluster leaves it alone and has no packages; rename this Cluster",
		what, l[packagesv1.ClusterNamespaceLabel], l[packagesv1.ClusterNameLabel], l[packagesv1.ClusterUIDLabel])
}

// packagesReady is the PackagesReady condition of Cluster c: False naming the first conflict,
// else True.
func packagesReady(c *flotillav1.Cluster, conflicts []ctrlclient.Object) metav1.Condition {
	cond := metav1.Condition{
		Type: packagesv1.PackagesReadyCondition, ObservedGeneration: c.Generation,
		Status: metav1.ConditionTrue, Reason: packagesv1.ReadyReason,
		Message: fmt.Sprintf("namespace %s and PackageBundleController %s/%s belong to this Cluster",
			packagesv1.ClusterNamespace(c.Name), packagesv1.PackagesNamespace, c.Name),
	}
	if len(conflicts) > 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, packagesv1.NameConflictReason, conflictMessage(c, conflicts[0])
	}
	return cond
}

// setPackagesReady sets cond on c and reports whether that changed c's status.
func setPackagesReady(c *flotillav1.Cluster, cond metav1.Condition) bool {
	return meta.SetStatusCondition(&c.Status.Conditions, cond)
}

// ownStatus is the part of c's status the reconciler owns and applies: its PackagesReady
// condition. The Cluster reconciler of the cluster component applies the rest.
func ownStatus(c *flotillav1.Cluster) *flotillav1.Cluster {
	owned := &flotillav1.Cluster{}
	if cond := meta.FindStatusCondition(c.Status.Conditions, packagesv1.PackagesReadyCondition); cond != nil {
		owned.Status.Conditions = []metav1.Condition{*cond}
	}
	return owned
}

// kindOf names the kind of a derived object in messages.
func kindOf(obj ctrlclient.Object) string {
	if _, ok := obj.(*corev1.Namespace); ok {
		return "namespace"
	}
	return "PackageBundleController"
}
