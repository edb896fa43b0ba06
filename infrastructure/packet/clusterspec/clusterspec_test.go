package clusterspec

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

func input() Input {
	return Input{
		Cluster: &flotillav1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "metal"},
			Spec: flotillav1.ClusterSpec{
				ControlPlane:     flotillav1.ControlPlaneConfiguration{Count: 3},
				WorkerNodeGroups: []flotillav1.WorkerNodeGroup{{Name: "md-0", Count: 2, Labels: map[string]string{"b": "2", "a": "1"}}},
				ClusterNetwork:   flotillav1.ClusterNetwork{Pods: []string{"10.244.0.0/16"}},
			},
		},
		Version:             "v1.36.3",
		Datacenter:          &infrav1.PacketDatacenterConfig{Spec: infrav1.PacketDatacenterConfigSpec{ProjectID: "p1", Metro: "am"}},
		ControlPlaneMachine: &infrav1.PacketMachineConfig{Spec: infrav1.PacketMachineConfigSpec{Plan: "c3.small.x86"}},
		WorkerMachines:      map[string]*infrav1.PacketMachineConfig{"md-0": {Spec: infrav1.PacketMachineConfigSpec{Plan: "m3.small.x86", OS: "debian_12"}}},
	}
}

func TestObjectsOfAPacketCluster(t *testing.T) {
	g := NewWithT(t)
	objs, err := Objects(input())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(7))

	capi := objs[0].(*clusterv1.Cluster)
	g.Expect(capi.Spec.InfrastructureRef).To(Equal(clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.flotilla.dev", Kind: "PacketCluster", Name: "metal"}))
	g.Expect(capi.Spec.ControlPlaneRef).To(Equal(clusterv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane", Name: "metal"}))
	g.Expect(capi.Spec.ClusterNetwork.Pods.CIDRBlocks).To(Equal([]string{"10.244.0.0/16"}))

	pc := objs[1].(*infrav1.PacketCluster)
	g.Expect(pc.Spec.ProjectID).To(Equal("p1"))
	g.Expect(pc.Spec.Metro).To(Equal("am"))
	g.Expect(pc.Spec.IdentityRef).To(Equal(&infrav1.PacketClusterIdentityReference{Name: infrav1.DefaultPacketClusterIdentity}),
		"a datacenter config that names no identity uses the default one")
	g.Expect(pc.Spec.VIPManager).To(Equal(infrav1.VIPManagerKubeVIP))

	in := input()
	in.Datacenter.Spec.IdentityRef = &infrav1.PacketClusterIdentityReference{Name: "team-metal"}
	named, err := Objects(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(named[1].(*infrav1.PacketCluster).Spec.IdentityRef.Name).To(Equal("team-metal"))

	cpTemplate := objs[2].(*infrav1.PacketMachineTemplate)
	g.Expect(cpTemplate.Name).To(Equal("metal-control-plane"))
	g.Expect(cpTemplate.Spec.Template.Spec.OS).To(Equal("ubuntu_24_04"), "defaulted")
	g.Expect(cpTemplate.Spec.Template.Spec.BillingCycle).To(Equal("hourly"), "defaulted")

	kcp := objs[3].(*kubeadmcontrolplanev1.KubeadmControlPlane)
	g.Expect(kcp.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
	g.Expect(kcp.Spec.Version).To(Equal("v1.36.3"))
	g.Expect(kcp.Spec.MachineTemplate.Spec.InfrastructureRef.Name).To(Equal("metal-control-plane"))
	g.Expect(kcp.Spec.Rollout.Strategy.Type).To(Equal(kubeadmcontrolplanev1.RollingUpdateStrategyType))
	g.Expect(kcp.Spec.Rollout.Strategy.RollingUpdate.MaxSurge).To(Equal(ptr.To(intstr.FromInt32(1))))
	g.Expect(kcp.Spec.KubeadmConfigSpec.Format).To(Equal(bootstrapv1.CloudConfig))
	g.Expect(kcp.Spec.KubeadmConfigSpec.InitConfiguration.NodeRegistration.KubeletExtraArgs).To(ContainElement(
		bootstrapv1.Arg{Name: "provider-id", Value: ptr.To("equinixmetal://{{ v1.instance_id }}")}))
	g.Expect(kcp.Spec.KubeadmConfigSpec.PreKubeadmCommands).To(ContainElement(ContainSubstring("https://pkgs.k8s.io/core:/stable:/v1.36/deb/")))
	g.Expect(kcp.Spec.KubeadmConfigSpec.PreKubeadmCommands).To(ContainElement(ContainSubstring("kubeadm=1.36.3-*")))
	g.Expect(kcp.Spec.KubeadmConfigSpec.PreKubeadmCommands).To(ContainElement(ContainSubstring("dev lo")), "the elastic IP is bound on control planes")

	pmt := objs[4].(*infrav1.PacketMachineTemplate)
	g.Expect(pmt.Name).To(Equal("metal-md-0"))
	g.Expect(pmt.Spec.Template.Spec.OS).To(Equal("debian_12"))
	g.Expect(pmt.Labels).To(HaveKeyWithValue(flotillav1.WorkerNodeGroupLabel, "md-0"))

	kct := objs[5].(*bootstrapv1.KubeadmConfigTemplate)
	g.Expect(kct.Spec.Template.Spec.JoinConfiguration.NodeRegistration.KubeletExtraArgs).To(ContainElement(
		bootstrapv1.Arg{Name: "node-labels", Value: ptr.To("a=1,b=2")}))
	g.Expect(kct.Spec.Template.Spec.PreKubeadmCommands).NotTo(ContainElement(ContainSubstring("dev lo")), "workers do not hold the elastic IP")

	md := objs[6].(*clusterv1.MachineDeployment)
	g.Expect(md.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
	g.Expect(md.Spec.Template.Spec.Version).To(Equal("v1.36.3"))
	g.Expect(md.Spec.Template.Spec.Bootstrap.ConfigRef).To(Equal(clusterv1.ContractVersionedObjectReference{APIGroup: "bootstrap.cluster.x-k8s.io", Kind: "KubeadmConfigTemplate", Name: "metal-md-0"}))
	g.Expect(md.Spec.Template.Spec.InfrastructureRef.Kind).To(Equal("PacketMachineTemplate"))
	g.Expect(md.Spec.Selector.MatchLabels).To(HaveKeyWithValue(clusterv1.MachineDeploymentNameLabel, "metal-md-0"))
	g.Expect(md.Spec.Template.Labels).To(HaveKeyWithValue(clusterv1.MachineDeploymentNameLabel, "metal-md-0"))

	for _, obj := range objs {
		g.Expect(obj.GetNamespace()).To(Equal("ns"))
		g.Expect(obj.GetLabels()).To(HaveKeyWithValue(flotillav1.ClusterNameLabel, "metal"))
	}
}

func TestObjectsNeedEveryConfig(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Input)
		want string
	}{
		{name: "a worker group without a machine config", edit: func(in *Input) { in.WorkerMachines = nil }, want: `worker node group "md-0" has no PacketMachineConfig`},
		{name: "no control plane machine config", edit: func(in *Input) { in.ControlPlaneMachine = nil }, want: "the control plane's PacketMachineConfig"},
		{name: "no datacenter config", edit: func(in *Input) { in.Datacenter = nil }, want: "PacketDatacenterConfig"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := input()
			tt.edit(&in)
			_, err := Objects(in)
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

func TestAnEndpointInTheSpecIsThePacketClustersEndpoint(t *testing.T) {
	g := NewWithT(t)
	in := input()
	in.Cluster.Spec.ControlPlane.Endpoint = &flotillav1.Endpoint{Host: "203.0.113.10", Port: 6443}
	pc := PacketCluster(in.Cluster, in.Datacenter)
	g.Expect(pc.Spec.ControlPlaneEndpoint).To(Equal(infrav1.APIEndpoint{Host: "203.0.113.10", Port: 6443}))
}
