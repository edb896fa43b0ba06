package cluster

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

func testCluster(mutate ...func(*flotillav1.Cluster)) *flotillav1.Cluster {
	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: "fleet", UID: types.UID("uid-w1"), Generation: 3},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			ControlPlane:      flotillav1.ControlPlaneConfiguration{Count: 1},
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
			WorkerNodeGroups: []flotillav1.WorkerNodeGroup{{
				Name:            "md-0",
				Count:           2,
				MachineGroupRef: flotillav1.Ref{Kind: flotillav1.LocalMachineConfigKind, Name: "small"},
			}},
		},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func TestDesiredCAPICluster(t *testing.T) {
	tests := []struct {
		name   string
		spec   func(*flotillav1.Cluster)
		paused bool
		check  func(g Gomega, capi *clusterv1.Cluster)
	}{
		{
			name: "a workload cluster points at its LocalCluster and LocalControlPlane and is owned by the Flotilla Cluster",
			check: func(g Gomega, capi *clusterv1.Cluster) {
				g.Expect(capi.Name).To(Equal("w1"))
				g.Expect(capi.Namespace).To(Equal("fleet"))
				g.Expect(capi.Spec.InfrastructureRef).To(Equal(clusterv1.ContractVersionedObjectReference{
					APIGroup: "infrastructure.flotilla.dev", Kind: "LocalCluster", Name: "w1"}))
				g.Expect(capi.Spec.ControlPlaneRef).To(Equal(clusterv1.ContractVersionedObjectReference{
					APIGroup: "controlplane.flotilla.dev", Kind: "LocalControlPlane", Name: "w1"}))
				g.Expect(capi.Labels).To(Equal(map[string]string{flotillav1.ClusterNameLabel: "w1"}))
				g.Expect(capi.OwnerReferences).To(ConsistOf(metav1.OwnerReference{
					APIVersion: "cluster.flotilla.dev/v1alpha1", Kind: "Cluster", Name: "w1", UID: "uid-w1",
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}))
				g.Expect(capi.Spec.Paused).To(BeNil(), "an unpaused cluster leaves spec.paused to others")
				g.Expect(capi.Spec.ClusterNetwork.Pods.CIDRBlocks).To(BeEmpty())
			},
		},
		{
			name: "a management cluster is labelled as one",
			spec: func(c *flotillav1.Cluster) { c.Spec.Management = true },
			check: func(g Gomega, capi *clusterv1.Cluster) {
				g.Expect(capi.Labels).To(HaveKeyWithValue(flotillav1.ManagementLabel, "true"))
			},
		},
		{
			name: "the cluster network is copied from the spec",
			spec: func(c *flotillav1.Cluster) {
				c.Spec.ClusterNetwork = flotillav1.ClusterNetwork{Pods: []string{"192.168.0.0/16"}, Services: []string{"10.96.0.0/12"}}
			},
			check: func(g Gomega, capi *clusterv1.Cluster) {
				g.Expect(capi.Spec.ClusterNetwork.Pods.CIDRBlocks).To(Equal([]string{"192.168.0.0/16"}))
				g.Expect(capi.Spec.ClusterNetwork.Services.CIDRBlocks).To(Equal([]string{"10.96.0.0/12"}))
			},
		},
		{
			name:   "a paused cluster sets spec.paused",
			paused: true,
			check: func(g Gomega, capi *clusterv1.Cluster) {
				g.Expect(capi.Spec.Paused).To(Equal(ptr.To(true)))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := testCluster()
			if tt.spec != nil {
				tt.spec(c)
			}
			tt.check(g, desiredCAPICluster(&scope{cluster: c, provider: &localProvider{}}, tt.paused))
		})
	}
}

func TestApplyConfiguration(t *testing.T) {
	tests := []struct {
		name  string
		obj   func() *clusterv1.Cluster
		check func(g Gomega, u map[string]any)
	}{
		{
			name: "status and the zero creation timestamp are left out",
			obj: func() *clusterv1.Cluster {
				capi := desiredCAPICluster(&scope{cluster: testCluster(), provider: &localProvider{}}, false)
				capi.Status.Phase = "Provisioned"
				return capi
			},
			check: func(g Gomega, u map[string]any) {
				g.Expect(u).NotTo(HaveKey("status"))
				g.Expect(u["metadata"]).NotTo(HaveKey("creationTimestamp"))
				g.Expect(u).To(HaveKeyWithValue("apiVersion", "cluster.x-k8s.io/v1beta2"))
				g.Expect(u).To(HaveKeyWithValue("kind", "Cluster"))
			},
		},
		{
			name: "fields Flotilla does not set are not sent, so it never claims them",
			obj: func() *clusterv1.Cluster {
				return desiredCAPICluster(&scope{cluster: testCluster(), provider: &localProvider{}}, false)
			},
			check: func(g Gomega, u map[string]any) {
				g.Expect(u["spec"]).NotTo(HaveKey("paused"))
				g.Expect(u["spec"]).NotTo(HaveKey("controlPlaneEndpoint"))
				g.Expect(u["spec"]).NotTo(HaveKey("topology"))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			u, err := applyConfiguration(tt.obj())
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, u.Object)
		})
	}
}
