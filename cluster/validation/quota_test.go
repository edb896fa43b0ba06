package validation_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	clustervalidation "github.com/flotilla-dev/flotilla/cluster/validation"
)

// quotaCluster is a Cluster of namespace with a group of simulated and a group of real nodes.
func quotaCluster(namespace, name string, simulated, real int32) flotillav1.Cluster {
	return flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: flotillav1.ClusterSpec{WorkerNodeGroups: []flotillav1.WorkerNodeGroup{
			{Name: "sim", Count: simulated},
			{Name: "real", Count: real, Nodes: flotillav1.RealNodes},
		}},
	}
}

func quota(clusters, workers *int32, real int32, namespaces ...string) flotillav1.TenantQuota {
	return flotillav1.TenantQuota{Spec: flotillav1.TenantQuotaSpec{Namespaces: namespaces, Clusters: clusters, Workers: workers, RealNodes: real}}
}

func TestLimitsOf(t *testing.T) {
	for _, tc := range []struct {
		name   string
		quotas []flotillav1.TenantQuota
		want   clustervalidation.Limits
	}{
		{"a namespace no quota names has no real nodes and no other limit", []flotillav1.TenantQuota{quota(ptr.To[int32](1), nil, 5, "b")},
			clustervalidation.Limits{}},
		{"a quota naming the namespace gives its limits", []flotillav1.TenantQuota{quota(ptr.To[int32](3), ptr.To[int32](10), 2, "b", "a")},
			clustervalidation.Limits{Clusters: ptr.To[int32](3), Workers: ptr.To[int32](10), RealNodes: 2}},
		{"of several quotas the smallest of each limit applies", []flotillav1.TenantQuota{
			quota(ptr.To[int32](3), nil, 2, "a"), quota(nil, ptr.To[int32](10), 4, "a"), quota(ptr.To[int32](1), nil, 1, "b")},
			clustervalidation.Limits{Clusters: ptr.To[int32](3), Workers: ptr.To[int32](10), RealNodes: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(clustervalidation.LimitsOf("a", tc.quotas)).To(Equal(tc.want))
		})
	}
}

func TestValidateClusterQuota(t *testing.T) {
	tenant := clustervalidation.Request{}
	others := []flotillav1.Cluster{
		quotaCluster("a", "one", 2, 1),
		quotaCluster("b", "elsewhere", 50, 50), // another namespace's: not counted
	}
	limits := clustervalidation.Limits{Clusters: ptr.To[int32](2), Workers: ptr.To[int32](6), RealNodes: 2}
	for _, tc := range []struct {
		name       string
		old, new   *flotillav1.Cluster
		limits     clustervalidation.Limits
		who        clustervalidation.Request
		wantFields []string
		wantText   string
	}{
		{name: "a cluster within every limit is allowed", new: ptr.To(quotaCluster("a", "two", 2, 1)), limits: limits},
		{name: "real nodes over the namespace's grant are refused", new: ptr.To(quotaCluster("a", "two", 0, 2)), limits: limits,
			wantFields: []string{"spec.workerNodeGroups"}, wantText: "may have 2 real nodes altogether and the others have 1: this cluster may have 1, not 2"},
		{name: "without a grant a tenant gets no real node", new: ptr.To(quotaCluster("a", "two", 1, 1)), limits: clustervalidation.Limits{},
			wantFields: []string{"spec.workerNodeGroups"}, wantText: "only an admin grants them, with a TenantQuota"},
		{name: "workers over the namespace's limit are refused", new: ptr.To(quotaCluster("a", "two", 3, 1)), limits: limits,
			wantFields: []string{"spec.workerNodeGroups"}, wantText: "may have 6 worker machines altogether (TenantQuota) and the others have 3: this cluster may have 3, not 4"},
		{name: "a cluster past the namespace's count is refused", new: ptr.To(quotaCluster("a", "two", 0, 0)),
			limits: clustervalidation.Limits{Clusters: ptr.To[int32](1)}, wantFields: []string{"metadata.namespace"}, wantText: "may hold 1 Clusters (TenantQuota) and holds 1 already"},
		{name: "an admin is held to no quota", new: ptr.To(quotaCluster("a", "two", 100, 100)), who: clustervalidation.Request{Admin: true}},
		{name: "a cluster over a lowered limit may shrink", old: ptr.To(quotaCluster("a", "two", 9, 3)), new: ptr.To(quotaCluster("a", "two", 8, 2)),
			limits: limits},
		{name: "a cluster over a lowered limit may not grow", old: ptr.To(quotaCluster("a", "two", 9, 3)), new: ptr.To(quotaCluster("a", "two", 10, 3)),
			limits: limits, wantFields: []string{"spec.workerNodeGroups"}, wantText: "worker machines altogether"},
		{name: "an update is not counted as a second cluster", old: ptr.To(quotaCluster("a", "one", 2, 1)), new: ptr.To(quotaCluster("a", "one", 2, 1)),
			limits: clustervalidation.Limits{Clusters: ptr.To[int32](1), Workers: ptr.To[int32](3), RealNodes: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			who := tc.who
			if !who.Admin {
				who = tenant
			}
			errs := clustervalidation.ValidateClusterQuota(tc.old, tc.new, others, tc.limits, who)
			var fields []string
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			g.Expect(fields).To(ConsistOf(tc.wantFields))
			if tc.wantText != "" {
				g.Expect(errs.ToAggregate().Error()).To(ContainSubstring(tc.wantText))
			}
		})
	}
}
