package realnode_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/internal/realnodetest"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

func apply(g Gomega, c ctrlclient.Client, obj ctrlclient.Object) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Apply(context.Background(), ctrlclient.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}),
		ctrlclient.FieldOwner("test"), ctrlclient.ForceOwnership)).To(Succeed())
}

// testCluster is a control plane readied for real nodes, all on this machine: its node network,
// what real nodes need in it (realnode.ClusterObjects, CoreDNS included) and an image mirror.
type testCluster struct {
	set    binaries.Set
	dir    string
	status *controlplane.Status
	c      ctrlclient.Client
	ca     []byte
	dns    netip.Addr
	mirror registryconn.Mirror
	images realnode.NodeImages
}

// startCluster starts a control plane with real nodes that is deleted when t ends, whose nodes
// pull from the image mirror newMirror serves.
func startCluster(t *testing.T, newMirror func(testing.TB, binaries.Set) registryconn.Mirror) *testCluster {
	t.Helper()
	set := realnodetest.Binaries(t, binaries.Supported[0])
	g := NewWithT(t)
	ctx := context.Background()
	mirror := newMirror(t, set)
	host, _, err := registryconn.SplitRegistry(mirror.Registry)
	g.Expect(err).NotTo(HaveOccurred())

	clusterDir := filepath.Join(t.TempDir(), "clusters", "rn")
	cfg := controlplane.Config{
		Name: "rn", Dir: clusterDir, Binaries: set, ControllerManager: true, Scheduler: true, UnsafeNoFsync: true,
		RealNodes: &controlplane.RealNodes{PodCIDR: "192.168.0.0/16", Mirror: host},
	}
	status, err := controlplane.Ensure(ctx, cfg)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := controlplane.Delete(context.Background(), clusterDir); err != nil {
			t.Error(err)
		}
	})
	g.Expect(controlplane.WaitReady(ctx, cfg)).To(Succeed())
	kubeconfig, err := controlplane.AdminKubeconfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	rest, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := ctrlclient.New(rest, ctrlclient.Options{Scheme: clientgoscheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	dns, err := realnode.DNSServiceIP("10.96.0.0/12")
	g.Expect(err).NotTo(HaveOccurred())
	images := realnodetest.RecordImages(t, t.TempDir(), set)
	for _, obj := range realnode.ClusterObjects(dns, images) {
		apply(g, c, obj)
	}
	// The Pods of the tests run as the namespace's ServiceAccount.
	g.Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "default"}})).To(Or(Succeed(), MatchError(ContainSubstring("already exists"))))
	ca, err := os.ReadFile(filepath.Join(clusterDir, "pki", "ca.crt"))
	g.Expect(err).NotTo(HaveOccurred())
	return &testCluster{set: set, dir: clusterDir, status: status, c: c, ca: ca, dns: dns, mirror: mirror, images: images}
}

// joinNode runs the real node name with a bootstrap token of the cluster until its Node is Ready
// and kube-proxy runs, and deletes it when t ends. It returns the node's Config and the Status
// of its last Ensure.
func (tc *testCluster) joinNode(t *testing.T, name string) (realnode.Config, *realnode.Status) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	token := realnode.NewBootstrapToken()
	secret, err := realnode.BootstrapTokenSecret(token, name, time.Now().Add(time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tc.c.Create(ctx, secret)).To(Succeed())
	nodeDir := filepath.Join(realnode.NodesDir(tc.dir), name)
	node := realnode.Config{
		Name: name, Dir: nodeDir, Binaries: tc.set, Network: tc.status.NodeNetwork, APIServerPort: tc.status.Port, Mirror: tc.mirror, Images: tc.images,
		CACert: tc.ca, BootstrapToken: token, ProviderID: "local://test/" + name, Labels: map[string]string{realnode.SimulatedLabel: "false"},
		PodCIDR: "192.168.0.0/16", ClusterDNS: tc.dns.String(),
	}
	t.Cleanup(func() { _ = realnode.Delete(context.Background(), nodeDir) })
	t.Cleanup(func() { // runs first: the logs before they go
		if t.Failed() {
			keeper := process.Keeper{RunDir: filepath.Join(nodeDir, "run"), LogDir: filepath.Join(nodeDir, "logs")}
			for _, name := range []string{binaries.Containerd, binaries.Kubelet, binaries.KubeProxy} {
				t.Logf("the end of %s's log:\n%s", name, keeper.LogTail(name, 30))
			}
		}
	})
	start := time.Now()
	var status *realnode.Status
	g.Eventually(func(g Gomega) {
		status, err = realnode.Ensure(ctx, node)
		g.Expect(err).NotTo(HaveOccurred())
		n := &corev1.Node{}
		g.Expect(tc.c.Get(ctx, ctrlclient.ObjectKey{Name: name}, n)).To(Succeed())
		g.Expect(nodeReady(n)).To(BeTrue())
		g.Expect(status.Processes).To(HaveLen(3), "kube-proxy runs once kubelet has joined")
	}, 60*time.Second, 500*time.Millisecond).Should(Succeed())
	t.Logf("node %s Ready %s after its first Ensure", name, time.Since(start).Round(100*time.Millisecond))
	return node, status
}

// runPod creates pod and waits until it runs with its containers Ready.
func (tc *testCluster) runPod(t *testing.T, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(tc.c.Create(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(tc.c.Get(ctx, ctrlclient.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "%+v", pod.Status)
		g.Expect(pod.Status.ContainerStatuses).NotTo(BeEmpty())
		for _, c := range pod.Status.ContainerStatuses {
			g.Expect(c.Ready).To(BeTrue(), "container %s is Ready", c.Name)
		}
	}, 60*time.Second, 500*time.Millisecond).Should(Succeed())
	return pod
}

// TestARealNodeJoinsRunsPodsSurvivesKillsAndLeavesNothing runs one real node against a control
// plane readied for it, all on this machine: the node joins with a bootstrap token, becomes
// Ready, runs a Pod from images of the mirror (as a management cluster's mirror would be: over
// TLS with its own CA, with a user, the images below a prefix), reaches its API server through
// the kubernetes Service, keeps its Pod when kubelet and containerd are killed and started
// again, and leaves no process, namespace, interface, mount or cgroup behind when it is deleted.
func TestARealNodeJoinsRunsPodsSurvivesKillsAndLeavesNothing(t *testing.T) {
	tc := startCluster(t, func(t testing.TB, set binaries.Set) registryconn.Mirror {
		return realnodetest.SecureMirror(t, set, "copies/air-gap")
	})
	g := NewWithT(t)
	ctx := context.Background()
	c := tc.c
	node, status := tc.joinNode(t, "n1")
	nodeDir := node.Dir
	g.Expect(realnode.BootstrapToken(nodeDir)).To(BeEmpty(), "the bootstrap token is forgotten once kubelet has its certificate")
	var err error

	// A Pod that asks its API server for its version through the kubernetes Service, with its
	// ServiceAccount's credentials, and then serves.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{realnode.SimulatedLabel: "false"},
			InitContainers: []corev1.Container{{
				Name: "ask", Image: ociimage.HelloFlotilla.Name,
				Command: []string{"/hello-flotilla", "get", "--in-cluster", "https://kubernetes.default.svc/readyz"},
			}},
			Containers: []corev1.Container{{Name: "web", Image: ociimage.HelloFlotilla.Name}},
		},
	}
	g.Expect(c.Create(ctx, pod)).To(Succeed())
	var containerID string
	g.Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, ctrlclient.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning), "%+v", pod.Status)
		g.Expect(pod.Status.InitContainerStatuses).To(HaveLen(1))
		g.Expect(pod.Status.InitContainerStatuses[0].State.Terminated).NotTo(BeNil())
		g.Expect(pod.Status.InitContainerStatuses[0].State.Terminated.ExitCode).To(BeZero(), "the Pod reached its API server through the kubernetes Service")
		g.Expect(pod.Status.ContainerStatuses[0].Ready).To(BeTrue())
		containerID = pod.Status.ContainerStatuses[0].ContainerID
	}, 60*time.Second, 500*time.Millisecond).Should(Succeed())
	g.Expect(pod.Status.PodIP).To(HavePrefix("192.168."))

	// Kill kubelet and containerd: the next Ensure starts them again, and the Pod keeps its
	// container (the shim kept it running) and comes back Ready.
	keeper := process.Keeper{RunDir: filepath.Join(nodeDir, "run"), LogDir: filepath.Join(nodeDir, "logs")}
	for _, name := range []string{binaries.Kubelet, binaries.Containerd} {
		pid, running := keeper.Running(name)
		g.Expect(running).To(BeTrue())
		g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
		g.Eventually(func() bool { _, running := keeper.Running(name); return running }, 5*time.Second, 50*time.Millisecond).Should(BeFalse())
	}
	// They had run for less than StableAfter: each waits out a short back-off, as the
	// LocalMachine reconciler's next looks would see.
	g.Eventually(func(g Gomega) {
		status, err = realnode.Ensure(ctx, node)
		g.Expect(err).NotTo(HaveOccurred())
		restarts := map[string]int{}
		for _, p := range status.Processes {
			g.Expect(p.PID).NotTo(BeZero(), "%s runs", p.Name)
			restarts[p.Name] = p.Restarts
		}
		g.Expect(restarts).To(Equal(map[string]int{binaries.Containerd: 1, binaries.Kubelet: 1, binaries.KubeProxy: 0}))
	}, 30*time.Second, 250*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		n := &corev1.Node{}
		g.Expect(c.Get(ctx, ctrlclient.ObjectKey{Name: "n1"}, n)).To(Succeed())
		g.Expect(nodeReady(n)).To(BeTrue())
		g.Expect(c.Get(ctx, ctrlclient.ObjectKeyFromObject(pod), pod)).To(Succeed())
		g.Expect(pod.Status.ContainerStatuses[0].Ready).To(BeTrue())
	}, 60*time.Second, 500*time.Millisecond).Should(Succeed())
	g.Expect(pod.Status.ContainerStatuses[0].ContainerID).To(Equal(containerID), "the Pod kept its container")
	g.Expect(pod.Status.ContainerStatuses[0].RestartCount).To(BeZero())

	memory, err := realnode.Memory(nodeDir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(memory).To(HaveKey("kubelet"))
	g.Expect(memory).To(HaveKey("containerd"))
	t.Logf("memory of the node's processes: %v", memory)

	// Deleting the node leaves nothing of it on the host.
	g.Expect(realnode.Delete(ctx, nodeDir)).To(Succeed())
	g.Expect(nodeDir).NotTo(BeADirectory())
	g.Expect(realnodetest.HostTraces(tc.dir, "n1")).To(BeEmpty(), "no process, namespace, interface, mount or cgroup of the node is left")
	g.Expect(realnode.Delete(ctx, nodeDir)).To(Succeed(), "deleting again is not an error")
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
