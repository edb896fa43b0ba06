package cluster_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	packetspec "github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
)

// packetFixture creates the Packet configs and a Flotilla Cluster on them (1 control plane, one
// group of 2 workers) in a new namespace, named after the namespace.
func packetFixture(t *testing.T, g Gomega) *flotillav1.Cluster {
	t.Helper()
	ctx := context.Background()
	ns := env.NewNamespace(t)
	g.Expect(env.Client.Create(ctx, &infrav1.PacketDatacenterConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "metal", Namespace: ns},
		Spec:       infrav1.PacketDatacenterConfigSpec{ProjectID: "p", Metro: "da"},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &infrav1.PacketMachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "metal", Namespace: ns},
		Spec:       infrav1.PacketMachineConfigSpec{Plan: "c3.small.x86"},
	})).To(Succeed())
	machines := flotillav1.Ref{Kind: packetspec.MachineConfigKind, Name: "metal"}
	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: ns},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			ControlPlane:      flotillav1.ControlPlaneConfiguration{Count: 1, MachineGroupRef: &machines},
			DatacenterRef:     flotillav1.Ref{Kind: packetspec.DatacenterConfigKind, Name: "metal"},
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
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	// What Cluster API's Cluster controller checks before adding its reference
	// (ensureOwnerRefAndLabel): with it in place, it has nothing to add.
	want := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: c.Name, UID: capi.UID}

	for _, obj := range []ctrlclient.Object{&infrav1.PacketCluster{}, &kubeadmcontrolplanev1.KubeadmControlPlane{}} {
		g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key(c, c.Name), obj)).To(Succeed())
			g.Expect(util.HasExactOwnerRef(obj.GetOwnerReferences(), want)).To(BeTrue(), "%T owners: %v", obj, obj.GetOwnerReferences())
			g.Expect(obj.GetLabels()).To(HaveKeyWithValue(clusterv1.ClusterNameLabel, c.Name))
			g.Expect(metav1.GetControllerOf(obj)).To(BeNil(), "a plain reference, as Cluster API's own for a Cluster without topology")
		}, timeout, interval).Should(Succeed())
	}
}

// Cluster API's MachineSet would hold the workers back for 15 s if it saw the control plane
// before it reports a version; the MachineDeployment is created once it does.
func TestPacketWorkersMachineDeploymentIsCreatedOnceTheControlPlaneReportsItsVersion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := packetFixture(t, g)

	kcp := &kubeadmcontrolplanev1.KubeadmControlPlane{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name), kcp)).To(Succeed())
		g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), &infrav1.PacketMachineTemplate{})).To(Succeed(), "the group's templates are applied at once")
		g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), &bootstrapv1.KubeadmConfigTemplate{})).To(Succeed(), "the group's templates are applied at once")
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		err := env.Client.Get(ctx, key(c, c.Name+"-md-0"), &clusterv1.MachineDeployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "MachineDeployment: %v", err)
	}, 2*time.Second, interval).Should(Succeed())
	g.Expect(conditionOf(g, c, flotillav1.WorkersReadyCondition).Message).To(ContainSubstring("MachineDeployment " + c.Name + "-md-0 does not exist yet"))

	// What KubeadmControlPlane writes once it has created the first control plane Machine.
	kcp.Status.Versions = []clusterv1.StatusVersion{{Version: "v1.36.3", Replicas: 1}}
	g.Expect(env.Client.Status().Update(ctx, kcp)).To(Succeed())
	g.Eventually(func(g Gomega) {
		md := &clusterv1.MachineDeployment{}
		g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), md)).To(Succeed())
		g.Expect(md.Spec.Replicas).To(Equal(ptr.To[int32](2)))
	}, timeout, interval).Should(Succeed())
}
