package cluster_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
)

// packetFixture creates the Packet configs and a Flotilla Cluster "p1" on them (1 control plane,
// one group of 2 workers) in a new namespace.
func packetFixture(t *testing.T, g Gomega) *flotillav1.Cluster {
	t.Helper()
	ctx := context.Background()
	ns := env.NewNamespace(t)
	g.Expect(env.Client.Create(ctx, &infrav1.PacketDatacenterConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "metal", Namespace: ns},
		Spec:       infrav1.PacketDatacenterConfigSpec{APIURL: "http://127.0.0.1:1/metal/v1", ProjectID: "p", Metro: "da"},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &infrav1.PacketMachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "metal", Namespace: ns},
		Spec:       infrav1.PacketMachineConfigSpec{Plan: "c3.small.x86"},
	})).To(Succeed())
	machines := flotillav1.Ref{Kind: clusterspec.MachineConfigKind, Name: "metal"}
	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "p1", Namespace: ns},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			ControlPlane:      flotillav1.ControlPlaneConfiguration{Count: 1, MachineGroupRef: &machines},
			DatacenterRef:     flotillav1.Ref{Kind: clusterspec.DatacenterConfigKind, Name: "metal"},
			WorkerNodeGroups:  []flotillav1.WorkerNodeGroup{{Name: "md-0", Count: 2, MachineGroupRef: machines}},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	return c
}

// Cluster API's Cluster controller is not running here, so only the Cluster reconciler can have
// put the reference on the PacketCluster and the KubeadmControlPlane.
func TestPacketClusterAndControlPlaneAreOwnedByTheCAPIClusterFromTheStart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := packetFixture(t, g)

	capi := &clusterv1.Cluster{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, "p1"), capi)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	// What Cluster API's Cluster controller checks before adding its reference
	// (ensureOwnerRefAndLabel): with it in place, it has nothing to add.
	want := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: "p1", UID: capi.UID}

	for _, obj := range []client.Object{&infrav1.PacketCluster{}, &kubeadmcontrolplanev1.KubeadmControlPlane{}} {
		g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key(c, "p1"), obj)).To(Succeed())
			g.Expect(util.HasExactOwnerRef(obj.GetOwnerReferences(), want)).To(BeTrue(), "%T owners: %v", obj, obj.GetOwnerReferences())
			g.Expect(obj.GetLabels()).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, "p1"))
			g.Expect(metav1.GetControllerOf(obj)).To(BeNil(), "a plain reference, as Cluster API's own for a Cluster without topology")
		}, timeout, interval).Should(Succeed())
	}
}
