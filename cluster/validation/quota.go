package validation

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// Limits are what the TenantQuotas naming one namespace allow its Clusters altogether; nil
// means unlimited.
type Limits struct {
	Clusters  *int32
	Workers   *int32
	RealNodes int32
}

// LimitsOf returns the limits of namespace under quotas: the smallest of each limit among the
// quotas that name it, and no real nodes when none does.
func LimitsOf(namespace string, quotas []flotillav1.TenantQuota) Limits {
	var l Limits
	granted := false
	for _, q := range quotas {
		if !slices.Contains(q.Spec.Namespaces, namespace) {
			continue
		}
		l.Clusters = smaller(l.Clusters, q.Spec.Clusters)
		l.Workers = smaller(l.Workers, q.Spec.Workers)
		if !granted || q.Spec.RealNodes < l.RealNodes {
			l.RealNodes = q.Spec.RealNodes
		}
		granted = true
	}
	return l
}

// smaller is the smaller of two limits, nil being unlimited.
func smaller(a, b *int32) *int32 {
	if a == nil || (b != nil && *b < *a) {
		return b
	}
	return a
}

// usage is what Clusters take of a namespace's limits.
type usage struct{ clusters, workers, realNodes int64 }

// usageOf adds up the worker machines and real nodes of c.
func usageOf(c *flotillav1.Cluster) usage {
	u := usage{clusters: 1}
	for _, g := range c.Spec.WorkerNodeGroups {
		u.workers += int64(g.Count)
		if g.NodesOf() == flotillav1.RealNodes {
			u.realNodes += int64(g.Count)
		}
	}
	return u
}

// ValidateClusterQuota checks a new Cluster (oldC nil) or a changed one against the limits of
// its namespace, counting the namespace's other Clusters (others may hold Clusters of every
// namespace, and newC itself: both are skipped). Admins are held to no quota. Only growth is
// checked: a Cluster over a limit an admin lowered may keep what it has, and shrink, but not
// grow.
func ValidateClusterQuota(oldC, newC *flotillav1.Cluster, others []flotillav1.Cluster, limits Limits, who Request) field.ErrorList {
	if who.Admin {
		return nil
	}
	var rest usage
	for i := range others {
		o := &others[i]
		if o.Namespace != newC.Namespace || o.Name == newC.Name {
			continue
		}
		u := usageOf(o)
		rest.clusters += u.clusters
		rest.workers += u.workers
		rest.realNodes += u.realNodes
	}
	was, now := usage{}, usageOf(newC)
	if oldC != nil {
		was = usageOf(oldC)
	}
	var errs field.ErrorList
	if oldC == nil && limits.Clusters != nil && rest.clusters+1 > int64(*limits.Clusters) {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "namespace"), fmt.Sprintf(
			"namespace %s may hold %d Clusters (TenantQuota) and holds %d already; delete one, or ask an admin to raise the TenantQuota's spec.clusters",
			newC.Namespace, *limits.Clusters, rest.clusters)))
	}
	groups := spec.Child("workerNodeGroups")
	if limits.Workers != nil && now.workers > was.workers && rest.workers+now.workers > int64(*limits.Workers) {
		errs = append(errs, field.Forbidden(groups, fmt.Sprintf(
			"the Clusters of namespace %s may have %d worker machines altogether (TenantQuota) and the others have %d: this cluster may have %d, not %d; "+
				"lower the counts, or ask an admin to raise the TenantQuota's spec.workers",
			newC.Namespace, *limits.Workers, rest.workers, max(int64(*limits.Workers)-rest.workers, 0), now.workers)))
	}
	if now.realNodes > was.realNodes && rest.realNodes+now.realNodes > int64(limits.RealNodes) {
		errs = append(errs, field.Forbidden(groups, fmt.Sprintf(
			"the Clusters of namespace %s may have %d real nodes altogether and the others have %d: this cluster may have %d, not %d; "+
				"real nodes run on the management cluster's machine, so only an admin grants them, with a TenantQuota naming the namespace (spec.realNodes; see docs/security.md); "+
				"use simulated nodes (nodes: Simulated) meanwhile",
			newC.Namespace, limits.RealNodes, rest.realNodes, max(int64(limits.RealNodes)-rest.realNodes, 0), now.realNodes)))
	}
	return errs
}
