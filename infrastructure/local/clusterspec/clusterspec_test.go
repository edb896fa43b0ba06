package clusterspec

import (
	"cmp"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
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

func TestObjectsOfALocalCluster(t *testing.T) {
	g := NewWithT(t)
	c := testCluster(func(c *flotillav1.Cluster) {
		c.Spec.WorkerNodeGroups = append(c.Spec.WorkerNodeGroups, flotillav1.WorkerNodeGroup{Name: "md-1", Count: 1})
	})
	md := func(version string) *clusterv1.MachineDeployment {
		return &clusterv1.MachineDeployment{Spec: clusterv1.MachineDeploymentSpec{Template: clusterv1.MachineTemplateSpec{
			Spec: clusterv1.MachineSpec{Version: version}}}}
	}
	objs := Objects(Input{
		Cluster: c, Version: "v1.36.3", GroupVersions: map[string]string{"md-1": "v1.35.4"},
		Datacenter:         &infrav1.LocalDatacenterConfig{Spec: infrav1.LocalDatacenterConfigSpec{ControllerManager: ptr.To(false)}},
		MachineConfigs:     map[string]*infrav1.LocalMachineConfig{"md-0": {Spec: infrav1.LocalMachineConfigSpec{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}},
		ControlPlane:       &controlplanev1.LocalControlPlane{Status: controlplanev1.LocalControlPlaneStatus{Version: "v1.35.4"}},
		MachineDeployments: map[string]*clusterv1.MachineDeployment{"md-0": md("v1.35.4")},
	})

	kinds := make([]string, 0, len(objs))
	for _, obj := range objs {
		kinds = append(kinds, fmt.Sprintf("%T %s", obj, obj.GetName()))
	}
	g.Expect(kinds).To(Equal([]string{
		"*v1.Secret w1-bootstrap", "*v1alpha1.LocalCluster w1", "*v1alpha1.LocalControlPlane w1",
		"*v1alpha1.LocalMachineTemplate w1-md-0", "*v1beta2.MachineDeployment w1-md-0",
		"*v1alpha1.LocalMachineTemplate w1-md-1", "*v1beta2.MachineDeployment w1-md-1",
	}), "the bootstrap Secret, the cluster and control plane, then each group's template and MachineDeployment")
	g.Expect(objs[2].(*controlplanev1.LocalControlPlane).Spec.ControllerManager).To(Equal(ptr.To(false)), "from the datacenter config")
	cpu := objs[3].(*infrav1.LocalMachineTemplate).Spec.Template.Spec.Capacity[corev1.ResourceCPU]
	g.Expect(cpu.String()).To(Equal("2"), "from the group's machine config")
	g.Expect(objs[4].(*clusterv1.MachineDeployment).Spec.Template.Spec.Version).To(Equal("v1.35.4"),
		"an existing group waits for the control plane to run the cluster's version")
	g.Expect(objs[6].(*clusterv1.MachineDeployment).Spec.Template.Spec.Version).To(Equal("v1.35.4"), "a group's pinned version")
}

func TestRefsOfTheCAPICluster(t *testing.T) {
	g := NewWithT(t)
	g.Expect(InfrastructureRef("w1")).To(Equal(clusterv1.ContractVersionedObjectReference{
		APIGroup: "infrastructure.flotilla.dev", Kind: "LocalCluster", Name: "w1"}))
	g.Expect(ControlPlaneRef("w1")).To(Equal(clusterv1.ContractVersionedObjectReference{
		APIGroup: "controlplane.flotilla.dev", Kind: "LocalControlPlane", Name: "w1"}))
}

func TestControlPlane(t *testing.T) {
	tests := []struct {
		name  string
		spec  func(*flotillav1.Cluster)
		dc    *infrav1.LocalDatacenterConfig
		check func(g Gomega, lcp *controlplanev1.LocalControlPlane)
	}{
		{
			name: "the control plane runs the resolved version and leaves the endpoint to the provider",
			check: func(g Gomega, lcp *controlplanev1.LocalControlPlane) {
				g.Expect(lcp.Name).To(Equal("w1"))
				g.Expect(lcp.Spec.Version).To(Equal("v1.36.3"))
				g.Expect(lcp.Spec.ControlPlaneEndpoint).To(BeZero())
				g.Expect(lcp.Spec.ControllerManager).To(BeNil())
				g.Expect(lcp.Labels).To(HaveKeyWithValue(flotillav1.ClusterNameLabel, "w1"))
				g.Expect(lcp.Labels).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, "w1"))
				g.Expect(lcp.OwnerReferences).To(BeEmpty(), "CAPI makes the CAPI Cluster its owner")
			},
		},
		{
			name: "the datacenter config switches processes off",
			dc: &infrav1.LocalDatacenterConfig{Spec: infrav1.LocalDatacenterConfigSpec{
				ControllerManager: ptr.To(false), Scheduler: ptr.To(true)}},
			check: func(g Gomega, lcp *controlplanev1.LocalControlPlane) {
				g.Expect(lcp.Spec.ControllerManager).To(Equal(ptr.To(false)))
				g.Expect(lcp.Spec.Scheduler).To(Equal(ptr.To(true)))
			},
		},
		{
			name: "an endpoint and a service range in the spec are passed on",
			spec: func(c *flotillav1.Cluster) {
				c.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Host: "127.0.0.1", Port: 36443}
				c.Spec.ClusterNetwork.Services = []string{"10.128.0.0/12"}
			},
			check: func(g Gomega, lcp *controlplanev1.LocalControlPlane) {
				g.Expect(lcp.Spec.ControlPlaneEndpoint).To(Equal(controlplanev1.APIEndpoint{Host: "127.0.0.1", Port: 36443}))
				g.Expect(lcp.Spec.ServiceClusterIPRange).To(Equal("10.128.0.0/12"))
			},
		},
		{
			name: "a cluster of simulated nodes has no real nodes to ready the control plane for",
			check: func(g Gomega, lcp *controlplanev1.LocalControlPlane) {
				g.Expect(lcp.Spec.RealNodes).To(BeNil())
			},
		},
		{
			name: "a group of real nodes readies the control plane with the datacenter's network and mirror and the Pod range",
			spec: func(c *flotillav1.Cluster) {
				c.Spec.WorkerNodeGroups[0].Nodes = flotillav1.RealNodes
				c.Spec.ClusterNetwork.Pods = []string{"172.16.0.0/16"}
			},
			dc: &infrav1.LocalDatacenterConfig{Spec: infrav1.LocalDatacenterConfigSpec{NodeNetwork: "10.201.0.0/24", ImageMirror: "127.0.0.1:5002"}},
			check: func(g Gomega, lcp *controlplanev1.LocalControlPlane) {
				g.Expect(lcp.Spec.RealNodes).To(Equal(&controlplanev1.RealNodesSpec{Network: "10.201.0.0/24", PodCIDR: "172.16.0.0/16", ImageMirror: "127.0.0.1:5002"}))
			},
		},
		{
			name: "without a datacenter config real nodes get a chosen network and the embedded registry",
			spec: func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Nodes = flotillav1.RealNodes },
			check: func(g Gomega, lcp *controlplanev1.LocalControlPlane) {
				g.Expect(lcp.Spec.RealNodes).To(Equal(&controlplanev1.RealNodesSpec{PodCIDR: "192.168.0.0/16", ImageMirror: "127.0.0.1:5001"}))
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
			tt.check(g, ControlPlane(c, "v1.36.3", tt.dc))
		})
	}
}

func TestMachineTemplate(t *testing.T) {
	tests := []struct {
		name string
		mc   *infrav1.LocalMachineConfig
		want corev1.ResourceList
	}{
		{
			name: "a machine config without capacity gets the provider's defaults",
			mc:   &infrav1.LocalMachineConfig{},
			want: infrav1.DefaultCapacity(),
		},
		{
			name: "a machine config's capacity overrides the defaults it names",
			mc: &infrav1.LocalMachineConfig{Spec: infrav1.LocalMachineConfigSpec{Capacity: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("2")}}},
			want: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("16Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := testCluster()
			lmt := MachineTemplate(c, c.Spec.WorkerNodeGroups[0], tt.mc)
			g.Expect(lmt.Name).To(Equal("w1-md-0"))
			g.Expect(lmt.Labels).To(HaveKeyWithValue(flotillav1.WorkerNodeGroupLabel, "md-0"))
			g.Expect(lmt.OwnerReferences).To(HaveLen(1))
			g.Expect(lmt.OwnerReferences[0].UID).To(Equal(types.UID("uid-w1")))
			g.Expect(lmt.Spec.Template.Spec.Node).To(Equal(infrav1.SimulatedNode))
			g.Expect(lmt.Spec.Template.Spec.Capacity).To(HaveLen(len(tt.want)))
			for name, quantity := range tt.want {
				got := lmt.Spec.Template.Spec.Capacity[name]
				g.Expect(got.Cmp(quantity)).To(Equal(0), "capacity %s", name)
			}
		})
	}
}

func TestMachineTemplateOfRealNodes(t *testing.T) {
	g := NewWithT(t)
	c := testCluster(func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Nodes = flotillav1.RealNodes })
	lmt := MachineTemplate(c, c.Spec.WorkerNodeGroups[0], nil)
	g.Expect(lmt.Spec.Template.Spec.Node).To(Equal(infrav1.RealNode))
}

func TestMachineDeployment(t *testing.T) {
	tests := []struct {
		name  string
		group flotillav1.WorkerNodeGroup
		check func(g Gomega, md *clusterv1.MachineDeployment)
	}{
		{
			name:  "a group becomes a MachineDeployment of count machines from its template and the empty bootstrap secret",
			group: flotillav1.WorkerNodeGroup{Name: "md-0", Count: 3},
			check: func(g Gomega, md *clusterv1.MachineDeployment) {
				g.Expect(md.Name).To(Equal("w1-md-0"))
				g.Expect(md.Spec.ClusterName).To(Equal("w1"))
				g.Expect(md.Spec.Replicas).To(Equal(ptr.To[int32](3)))
				g.Expect(md.Spec.Template.Spec.ClusterName).To(Equal("w1"))
				g.Expect(md.Spec.Template.Spec.Version).To(Equal("v1.36.3"))
				g.Expect(md.Spec.Template.Spec.Bootstrap.DataSecretName).To(Equal(ptr.To("w1-bootstrap")))
				g.Expect(md.Spec.Template.Spec.InfrastructureRef).To(Equal(clusterv1.ContractVersionedObjectReference{
					APIGroup: "infrastructure.flotilla.dev", Kind: "LocalMachineTemplate", Name: "w1-md-0"}))
			},
		},
		{
			name:  "the fields CAPI's webhook would default are set explicitly",
			group: flotillav1.WorkerNodeGroup{Name: "md-0", Count: 1},
			check: func(g Gomega, md *clusterv1.MachineDeployment) {
				g.Expect(md.Labels).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, "w1"))
				g.Expect(md.Spec.Selector.MatchLabels).To(Equal(map[string]string{
					clusterv1.ClusterNameLabel: "w1", clusterv1.MachineDeploymentNameLabel: "w1-md-0"}))
				selector, err := metav1.LabelSelectorAsSelector(&md.Spec.Selector)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(selector.Matches(labels.Set(md.Spec.Template.Labels))).To(BeTrue(), "the template matches the selector")
				g.Expect(md.Spec.Rollout.Strategy.Type).To(Equal(clusterv1.RollingUpdateMachineDeploymentStrategyType))
				g.Expect(md.Spec.Rollout.Strategy.RollingUpdate.MaxSurge).To(Equal(ptr.To(intstr.FromInt32(1))))
				g.Expect(md.Spec.Rollout.Strategy.RollingUpdate.MaxUnavailable).To(Equal(ptr.To(intstr.FromInt32(0))))
				g.Expect(md.OwnerReferences).To(BeEmpty(), "CAPI makes the CAPI Cluster its owner")
			},
		},
		{
			name: "the group's labels go on the machines but never replace Flotilla's or CAPI's",
			group: flotillav1.WorkerNodeGroup{Name: "md-0", Count: 1, Labels: map[string]string{
				"tier": "gold", clusterv1.ClusterNameLabel: "other", flotillav1.WorkerNodeGroupLabel: "other"}},
			check: func(g Gomega, md *clusterv1.MachineDeployment) {
				for _, l := range []map[string]string{md.Labels, md.Spec.Template.Labels} {
					g.Expect(l).To(HaveKeyWithValue("tier", "gold"))
					g.Expect(l).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, "w1"))
					g.Expect(l).To(HaveKeyWithValue(flotillav1.WorkerNodeGroupLabel, "md-0"))
					g.Expect(l).To(HaveKeyWithValue(flotillav1.ClusterNameLabel, "w1"))
				}
			},
		},
		{
			name:  "a group of zero machines keeps its MachineDeployment at zero replicas",
			group: flotillav1.WorkerNodeGroup{Name: "md-0", Count: 0},
			check: func(g Gomega, md *clusterv1.MachineDeployment) {
				g.Expect(md.Spec.Replicas).To(Equal(ptr.To[int32](0)))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tt.check(g, MachineDeployment(testCluster(), tt.group, "v1.36.3"))
		})
	}
}

func TestWorkerVersion(t *testing.T) {
	cp := func(version string) *controlplanev1.LocalControlPlane {
		return &controlplanev1.LocalControlPlane{Status: controlplanev1.LocalControlPlaneStatus{Version: version}}
	}
	md := func(version string) *clusterv1.MachineDeployment {
		return &clusterv1.MachineDeployment{Spec: clusterv1.MachineDeploymentSpec{Template: clusterv1.MachineTemplateSpec{
			Spec: clusterv1.MachineSpec{Version: version}}}}
	}
	tests := []struct {
		name    string
		desired string // the cluster's version, v1.36.3, when empty
		cp      *controlplanev1.LocalControlPlane
		current *clusterv1.MachineDeployment
		want    string
	}{
		{name: "a new group gets the desired version", cp: cp("v1.35.4"), current: nil, want: "v1.36.3"},
		{name: "a new group of a new cluster gets the desired version", cp: nil, current: nil, want: "v1.36.3"},
		{name: "workers wait while the control plane still runs the old version", cp: cp("v1.35.4"), current: md("v1.35.4"), want: "v1.35.4"},
		{name: "workers wait while the control plane reports no version", cp: cp(""), current: md("v1.35.4"), want: "v1.35.4"},
		{name: "workers follow once the control plane runs the desired version", cp: cp("v1.36.3"), current: md("v1.35.4"), want: "v1.36.3"},
		{name: "a build suffix on the control plane's version does not hold workers back", cp: cp("v1.36.3-dirty"), current: md("v1.35.4"), want: "v1.36.3"},
		{name: "a group pinned to an older version moves up to it at once when the control plane is newer", desired: "v1.35.4", cp: cp("v1.36.3"), current: md("v1.34.1"), want: "v1.35.4"},
		{name: "a group pinned to the old version stays there through the control plane's upgrade", desired: "v1.35.4", cp: cp("v1.36.3"), current: md("v1.35.4"), want: "v1.35.4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(WorkerVersion(cmp.Or(tt.desired, "v1.36.3"), tt.cp, tt.current)).To(Equal(tt.want))
		})
	}
}
