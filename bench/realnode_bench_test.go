package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// BenchmarkRealNode measures real nodes (issue 13) on a management cluster of its own and a
// workload cluster with one real node, its images in a registry of this machine:
//   - real-node-ready-s: the Cluster's real group scaled from one node to two, from the change until
//     the new Node is Ready (its Machine is created at once; its images come from the local registry);
//   - hello-ready-s: `flotilla install package hello-flotilla` on the real node, until its Pod is
//     Ready, which needs its readiness probe's HTTP GET / answered by the server;
//   - real-node-MiB: the resident memory of one real node's processes (kubelet, containerd, its
//     shims, kube-proxy), with CoreDNS and hello-flotilla scheduled on it.
//
// It needs root and the node programs (make node-binaries); without them it is skipped, saying so.
func BenchmarkRealNode(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("real nodes make namespaces, cgroups and networks: run make bench as root")
	}
	if err := realnode.Prerequisites(); err != nil {
		b.Skipf("%v", err)
	}
	for range b.N {
		runRealNodeBenchmark(b)
	}
}

func runRealNodeBenchmark(b *testing.B) {
	ctx := b.Context()
	c, home, out := newBenchClient(b)

	addr := startRegistry(b, c)
	defer func() { _ = c.StopRegistry(context.Background()) }()
	conn := registryconn.Config{PlainHTTP: true}
	if _, err := c.BuildImages(ctx, client.BuildImagesOptions{Registry: addr, Connection: conn}); err != nil {
		b.Fatalf("%v (make node-binaries builds the image programs)", err)
	}
	published, err := c.Publish(ctx, client.PublishOptions{Registry: addr, Connection: conn})
	if err != nil {
		b.Fatal(err)
	}
	key, err := os.ReadFile(published.PublicKey)
	if err != nil {
		b.Fatal(err)
	}

	mgmtSpec := writeSpec(b, out, spec.GenerateOptions{Name: "mgmt", Provider: spec.ProviderLocal, Management: true})
	defer func() {
		if err := c.DeleteManagementCluster(context.Background(), client.DeleteManagementClusterOptions{Name: "mgmt", OutDir: out, Force: true}); err != nil {
			b.Error(err)
		}
	}()
	if err := c.CreateManagementCluster(ctx, client.CreateManagementClusterOptions{File: mgmtSpec, OutDir: out}); err != nil {
		b.Fatal(err)
	}
	kubeconfig := client.UserKubeconfigPath(out, "mgmt")
	kc, err := client.KubeClient(kubeconfig)
	if err != nil {
		b.Fatal(err)
	}

	generated, err := spec.Generate(spec.GenerateOptions{Name: "rn", Provider: spec.ProviderLocal, RealWorkers: 1})
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(out, "rn.yaml")
	mirrored := bytes.Replace(generated, []byte("imageMirror: "+infrav1.DefaultImageMirror), []byte("imageMirror: "+addr), 1)
	if err := os.WriteFile(file, mirrored, 0o600); err != nil {
		b.Fatal(err)
	}
	defer deleteClusters(b, kc, []string{"rn"})
	if err := c.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: file, Kubeconfig: kubeconfig, OutDir: out}); err != nil {
		b.Fatal(err)
	}
	workload, err := client.KubeClient(client.UserKubeconfigPath(out, "rn"))
	if err != nil {
		b.Fatal(err)
	}

	// real-node-ready-s: one more real node, as a user adds one: the Cluster's real group from
	// one machine to two.
	fc := &flotillav1.Cluster{}
	if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "rn"}, fc); err != nil {
		b.Fatal(err)
	}
	before := fc.DeepCopy()
	for i, g := range fc.Spec.WorkerNodeGroups {
		if g.NodesOf() == flotillav1.RealNodes {
			fc.Spec.WorkerNodeGroups[i].Count = 2
		}
	}
	start := time.Now()
	if err := kc.Patch(ctx, fc, ctrlclient.MergeFrom(before)); err != nil {
		b.Fatal(err)
	}
	if err := waitReady(ctx, func(ctx context.Context) (int, error) {
		nodes := &corev1.NodeList{}
		ready := 0
		err := workload.List(ctx, nodes, ctrlclient.MatchingLabels{infrav1.SimulatedNodeLabel: "false"})
		for _, n := range nodes.Items {
			if nodeReady(n) {
				ready++
			}
		}
		return ready, err
	}, 2); err != nil {
		b.Fatalf("the second real node did not become Ready: %v", err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "real-node-ready-s")

	// hello-ready-s: the package, on a real node.
	if _, err := c.InstallPackageController(ctx, kubeconfig, client.PackageControllerOptions{
		Cluster: "rn", Registry: addr, Repository: published.Repository, PublicKey: key, PlainHTTP: ptr.To(true),
	}); err != nil {
		b.Fatal(err)
	}
	start = time.Now()
	if _, err := c.InstallPackage(ctx, kubeconfig, client.InstallPackageOptions{
		Cluster: "rn", Package: "hello-flotilla", Set: []string{`nodeSelector.flotilla\.dev/simulated=false`},
	}); err != nil {
		b.Fatal(err)
	}
	var pod corev1.Pod
	if err := waitReady(ctx, func(ctx context.Context) (int, error) {
		pods := &corev1.PodList{}
		err := workload.List(ctx, pods, ctrlclient.InNamespace(packagesv1.DefaultTargetNamespace), ctrlclient.MatchingLabels{"app.kubernetes.io/name": "hello-flotilla"})
		for _, p := range pods.Items {
			if podReady(p) {
				pod = p
				return 1, err
			}
		}
		return 0, err
	}, 1); err != nil {
		b.Fatalf("hello-flotilla did not become Ready: %v", err)
	}
	b.ReportMetric(time.Since(start).Seconds(), "hello-ready-s")

	memory, err := realnode.Memory(filepath.Join(realnode.NodesDir(controlplane.ClusterDir(home, "rn")), pod.Spec.NodeName))
	if err != nil {
		b.Fatal(err)
	}
	var total uint64
	for _, bytes := range memory {
		total += bytes
	}
	b.ReportMetric(float64(total)/(1<<20), "real-node-MiB")
}

// waitReady polls count every 100 ms, for up to two minutes, until it reaches want.
func waitReady(ctx context.Context, count func(context.Context) (int, error), want int) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := count(ctx)
		return err == nil && n >= want, nil //nolint:nilerr // the API may blink; keep asking until the timeout
	})
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
