package local_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/realnodetest"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
)

// TestARealNodeIsReplacedWhenItsClusterIsUpgraded upgrades a cluster with one real worker from
// Kubernetes 1.35 to 1.36 the way Cluster API does it: the control plane first, then the
// MachineDeployment's version, which rolls a new Machine out before the old one goes. The new
// Machine's real node runs kubelet 1.36 and joins; the old Node is drained with real evictions
// (its Pod comes back on the new node) and its processes, network namespace, veth, mounts and
// cgroups leave the host; deleting the cluster then leaves neither its bridge nor its iptables
// rules.
func TestARealNodeIsReplacedWhenItsClusterIsUpgraded(t *testing.T) {
	const from, to = "v1.35.4", "v1.36.3"
	realnodetest.Binaries(t, from)
	registry := realnodetest.Mirror(t, realnodetest.Binaries(t, to))
	g := NewWithT(t)
	ctx := context.Background()
	home := newHome(t)
	realnodetest.RecordImages(t, home, realnodetest.Binaries(t, to))
	startManager(t, home)
	namespace := env.NewNamespace(t)
	dumpOnFailure(t, namespace)
	const name = "upgrade"
	clusterDir := controlplane.ClusterDir(home, name)
	t.Cleanup(func() {
		if t.Failed() {
			realnodetest.LogNodes(t, clusterDir)
		}
	})

	// A cluster at 1.35 with one real worker.
	objects := clusterObjects(namespace, name)
	lcp := objects[1].(*controlplanev1.LocalControlPlane)
	lcp.Spec.Version = from
	lcp.Spec.RealNodes = &controlplanev1.RealNodesSpec{PodCIDR: "192.168.0.0/16", ImageMirror: registry.Registry}
	create(ctx, g, objects...)
	workers := workerObjects(namespace, name, 1)
	workers[1].(*infrav1.LocalMachineTemplate).Spec.Template.Spec.Node = infrav1.RealNode
	md := workers[2].(*clusterv1.MachineDeployment)
	md.Spec.Template.Spec.Version = from
	create(ctx, g, workers...)

	var oldMachine *clusterv1.Machine
	var cs *kubernetes.Clientset
	g.Eventually(func(g Gomega) {
		oldMachine = runningRealMachine(ctx, g, namespace, from)
		cs = workloadClientset(ctx, g, namespace, name)
		node, err := cs.CoreV1().Nodes().Get(ctx, oldMachine.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(nodeIsReady(*node)).To(BeTrue())
		g.Expect(node.Status.NodeInfo.KubeletVersion).To(Equal(from))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Expect(realnodetest.HostTraces(clusterDir, oldMachine.Name)).NotTo(BeEmpty(), "the old node runs on this host")

	// A Deployment's Pod on the real node, held by a finalizer of the test once it runs so that
	// its eviction stays visible.
	labels := map[string]string{"app": "hello"}
	_, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{infrav1.SimulatedNodeLabel: "false"},
					Containers:   []corev1.Container{{Name: "web", Image: ociimage.HelloFlotilla.Name}},
				},
			},
		},
	}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	var pod *corev1.Pod
	g.Eventually(func(g Gomega) {
		pod = realnodetest.OnePod(ctx, g, cs, "default", "app=hello", "")
		g.Expect(pod.Spec.NodeName).To(Equal(oldMachine.Name))
		g.Expect(realnodetest.PodReady(pod)).To(BeTrue(), "%+v", pod.Status)
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	const hold = "test.flotilla.dev/hold"
	pod.Finalizers = append(pod.Finalizers, hold)
	pod, err = cs.CoreV1().Pods("default").Update(ctx, pod, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	// The upgrade: the control plane, then the workers.
	upgradeAt := time.Now()
	g.Eventually(func() error {
		current := &controlplanev1.LocalControlPlane{}
		if err := env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(lcp), current); err != nil {
			return err
		}
		current.Spec.Version = to
		return env.Client.Update(ctx, current)
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		current := &controlplanev1.LocalControlPlane{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(lcp), current)).To(Succeed())
		g.Expect(current.Status.Version).To(Equal(to))
		g.Expect(conditions.IsTrue(current, controlplanev1.AvailableCondition)).To(BeTrue())
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("control plane at %s %s after the upgrade began", to, time.Since(upgradeAt).Round(100*time.Millisecond))
	g.Eventually(func() error {
		current := &clusterv1.MachineDeployment{}
		if err := env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(md), current); err != nil {
			return err
		}
		current.Spec.Template.Spec.Version = to
		return env.Client.Update(ctx, current)
	}).WithTimeout(30 * time.Second).Should(Succeed())

	// The new Machine's real node joins at the new version.
	var newMachine *clusterv1.Machine
	g.Eventually(func(g Gomega) {
		newMachine = runningRealMachine(ctx, g, namespace, to)
		node, err := cs.CoreV1().Nodes().Get(ctx, newMachine.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(nodeIsReady(*node)).To(BeTrue())
		g.Expect(node.Status.NodeInfo.KubeletVersion).To(Equal(to))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Expect(newMachine.Name).NotTo(Equal(oldMachine.Name))
	t.Logf("real node %s with kubelet %s Ready %s after the upgrade began", newMachine.Name, to, time.Since(upgradeAt).Round(100*time.Millisecond))

	// The old Node is drained: its Pod is evicted, and comes back on the new node.
	g.Eventually(func(g Gomega) {
		got, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.DeletionTimestamp).NotTo(BeNil())
		g.Expect(realnodetest.DisruptionReason(got)).To(Equal("EvictionByEvictionAPI"))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	g.Eventually(func() error {
		got, err := cs.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		got.Finalizers = nil
		_, err = cs.CoreV1().Pods("default").Update(ctx, got, metav1.UpdateOptions{})
		return err
	}).WithTimeout(30 * time.Second).Should(Succeed())
	g.Eventually(func(g Gomega) {
		moved := realnodetest.OnePod(ctx, g, cs, "default", "app=hello", pod.Name)
		g.Expect(moved.Spec.NodeName).To(Equal(newMachine.Name))
		g.Expect(realnodetest.PodReady(moved)).To(BeTrue())
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

	// The old Machine and its Node go, and its real node leaves nothing on the host.
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(oldMachine), &clusterv1.Machine{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the old Machine is gone: %v", err)
		_, err = cs.CoreV1().Nodes().Get(ctx, oldMachine.Name, metav1.GetOptions{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the old Node is gone: %v", err)
		g.Expect(realnodetest.HostTraces(clusterDir, oldMachine.Name)).To(BeEmpty())
	}).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	t.Logf("upgrade %s → %s of a cluster with a real worker done in %s", from, to, time.Since(upgradeAt).Round(100*time.Millisecond))

	// Deleting the cluster leaves nothing of its nodes or its node network on the host.
	g.Expect(realnodetest.HostTraces(clusterDir, newMachine.Name)).NotTo(BeEmpty(), "the new node runs on this host")
	g.Expect(realnodetest.ClusterTraces(clusterDir)).NotTo(BeEmpty(), "the node network is there")
	g.Expect(env.Client.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, &clusterv1.Cluster{}))
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(BeTrue())
	g.Expect(realnodetest.HostTraces(clusterDir, newMachine.Name)).To(BeEmpty())
	g.Expect(realnodetest.ClusterTraces(clusterDir)).To(BeEmpty())
}

// runningRealMachine returns the namespace's one Machine at version whose LocalMachine has a
// real node, once it is Running and not being deleted.
func runningRealMachine(ctx context.Context, g Gomega, namespace, version string) *clusterv1.Machine {
	machines := &clusterv1.MachineList{}
	g.Expect(env.Client.List(ctx, machines, ctrlclient.InNamespace(namespace))).To(Succeed())
	var found []*clusterv1.Machine
	for i, m := range machines.Items {
		if m.Spec.Version != version || !m.DeletionTimestamp.IsZero() {
			continue
		}
		lm := &infrav1.LocalMachine{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: m.Spec.InfrastructureRef.Name}, lm)).To(Succeed())
		if lm.Spec.Node == infrav1.RealNode {
			found = append(found, &machines.Items[i])
		}
	}
	g.Expect(found).To(HaveLen(1), "one real Machine at %s", version)
	g.Expect(found[0].Status.Phase).To(Equal(string(clusterv1.MachinePhaseRunning)))
	return found[0]
}
