package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/internal/realnodetest"
	"github.com/flotilla-dev/flotilla/packages/bundle/archive"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
	"github.com/flotilla-dev/flotilla/pkg/registrymirror"
)

// testRealNodes is issue 13 tried as a new user would after `make quickstart`: a workload cluster
// with one simulated and one real node, Flotilla's images built into a registry of this machine,
// hello-flotilla installed on the real node; its log, a port-forward, an exec and cluster DNS
// work; with the management cluster's registry mirror set (issue 14: the catalog exported and
// imported into a second registry) and the first registry stopped, an addon's Pod and a new
// node's images come from the mirror alone; a killed kubelet and containerd come back with the
// Pod; deleting its Machine drains the Node with evictions and a new real node takes its Pod;
// deleting the cluster leaves nothing of the nodes on the host.
func testRealNodes(t *testing.T, f *fleet) {
	if os.Geteuid() != 0 {
		t.Skip("real nodes make namespaces, cgroups and networks: run the e2e suite as root")
	}
	if err := realnode.Prerequisites(); err != nil {
		t.Fatalf("%v (make test installs them)", err)
	}
	g := NewWithT(t)
	ctx := t.Context()
	out := t.TempDir()
	var progress bytes.Buffer
	c := newClient(t, f.home, &progress)
	newest, err := binaries.Find("", binaries.Supported[0])
	if err == nil {
		err = newest.Check(append(append([]string(nil), binaries.NodeNames...), binaries.ImageNames...)...)
	}
	g.Expect(err).NotTo(HaveOccurred(), "make test builds the node programs (make node-binaries)")

	// The registry, the images real nodes pull, and the catalog, before the cluster exists.
	addr := freeAddress(t)
	_, err = c.EnsureRegistry(ctx, client.RegistryOptions{Listen: addr})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.StopRegistry(context.Background()) })
	_, err = c.BuildImages(ctx, client.BuildImagesOptions{Registry: addr, Connection: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).NotTo(HaveOccurred())
	published, err := c.Publish(ctx, client.PublishOptions{Registry: addr, Connection: registryconn.Config{PlainHTTP: true}, ImageRegistry: addr})
	g.Expect(err).NotTo(HaveOccurred())
	publicKey, err := os.ReadFile(published.PublicKey)
	g.Expect(err).NotTo(HaveOccurred())

	const workload = "real"
	generated, err := spec.Generate(spec.GenerateOptions{Name: workload, Provider: spec.ProviderLocal, Workers: 1, RealWorkers: 1})
	g.Expect(err).NotTo(HaveOccurred())
	// The generated spec names the quickstart's registry address; this run's registry listens elsewhere.
	mirrored := bytes.Replace(generated, []byte("imageMirror: "+infrav1.DefaultImageMirror), []byte("imageMirror: "+addr), 1)
	g.Expect(mirrored).NotTo(Equal(generated))
	file := filepath.Join(out, workload+".yaml")
	g.Expect(os.WriteFile(file, mirrored, 0o600)).To(Succeed())

	start := time.Now()
	g.Expect(c.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: file, Kubeconfig: f.kubeconfig, OutDir: out})).To(Succeed(), progress.String())
	deleted := false
	clusterDir := controlplane.ClusterDir(f.home, workload)
	t.Cleanup(func() {
		if t.Failed() {
			realnodetest.LogNodes(t, clusterDir)
		}
		if !deleted {
			_ = c.DeleteWorkloadCluster(context.Background(), client.DeleteWorkloadClusterOptions{Name: workload, Namespace: "default", Kubeconfig: f.kubeconfig, OutDir: out})
		}
	})
	t.Logf("workload cluster %s with a real node Ready in %s", workload, time.Since(start).Round(time.Millisecond))
	kubeconfig := client.UserKubeconfigPath(out, workload)
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	cs, err := kubernetes.NewForConfig(rc)
	g.Expect(err).NotTo(HaveOccurred())

	realNode := realNodeOf(ctx, g, f.admin, workload)
	node, err := cs.CoreV1().Nodes().Get(ctx, realNode.Name, metaGet)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("real node %s Ready %s after its Machine was created", node.Name, readySince(node, realNode.CreationTimestamp.Time))

	_, err = c.InstallPackageController(ctx, f.kubeconfig, client.PackageControllerOptions{
		Cluster: workload, Registry: addr, Repository: published.Repository, PublicKey: publicKey, PlainHTTP: ptr.To(true),
	})
	g.Expect(err).NotTo(HaveOccurred())
	start = time.Now()
	_, err = c.InstallPackage(ctx, f.kubeconfig, client.InstallPackageOptions{
		Cluster: workload, Package: "hello-flotilla", Set: []string{`nodeSelector.flotilla\.dev/simulated=false`},
	})
	g.Expect(err).NotTo(HaveOccurred())
	var pod *corev1.Pod
	g.Eventually(func(g Gomega) {
		pod = helloPod(ctx, g, cs, "")
		g.Expect(pod.Spec.NodeName).To(Equal(realNode.Name))
		g.Expect(realnodetest.PodReady(pod)).To(BeTrue(), "%+v", pod.Status)
	}, 3*time.Minute, 200*time.Millisecond).Should(Succeed())
	t.Logf("hello-flotilla installed and answering its readiness probe on the real node in %s", time.Since(start).Round(time.Millisecond))

	t.Run("kubectl logs shows the server's log", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			logs, err := cs.CoreV1().Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(logs)).To(ContainSubstring("hello-flotilla serving /srv/www on :8080"))
			g.Expect(string(logs)).To(ContainSubstring("GET / 200"), "the readiness probes are logged")
		}, 30*time.Second, time.Second).Should(Succeed())
	})

	t.Run("port-forward answers HTTP", func(t *testing.T) {
		g := NewWithT(t)
		body := portForwardGet(ctx, g, rc, pod)
		g.Expect(body).To(ContainSubstring("hello"))
	})

	t.Run("exec runs in the container, and the Pod resolves kubernetes.default through CoreDNS", func(t *testing.T) {
		g := NewWithT(t)
		kubernetesService, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metaGet)
		g.Expect(err).NotTo(HaveOccurred())
		// CoreDNS starts when the real node joins, beside hello-flotilla rather than before it:
		// the lookup is asked of it once the kube-dns Service has a ready endpoint, and then
		// answers within the few seconds kube-proxy takes to route the Service to it.
		g.Eventually(func(g Gomega) {
			list, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kube-dns"})
			g.Expect(err).NotTo(HaveOccurred())
			ready := false
			for _, s := range list.Items {
				for _, e := range s.Endpoints {
					ready = ready || ptr.Deref(e.Conditions.Ready, false)
				}
			}
			g.Expect(ready).To(BeTrue(), "kube-dns has a ready endpoint")
		}, time.Minute, 200*time.Millisecond).Should(Succeed())
		g.Eventually(func(g Gomega) {
			stdout, stderr, err := execIn(ctx, rc, cs, pod, "/hello-flotilla", "lookup", "kubernetes.default")
			g.Expect(err).NotTo(HaveOccurred(), stderr)
			g.Expect(stdout).To(ContainSubstring(kubernetesService.Spec.ClusterIP))
		}, 10*time.Second, 500*time.Millisecond).Should(Succeed())
		_, _, err = execIn(ctx, rc, cs, pod, "/hello-flotilla", "lookup", "example.com")
		g.Expect(err).To(HaveOccurred(), "CoreDNS answers cluster names only: nothing leaves the machine")
	})

	t.Run("with the management cluster's registry mirror set, the node pulls from it alone", func(st *testing.T) {
		g := NewWithT(st)
		// Issue 14 as a user tries it: the catalog exported, imported into a second registry
		// (TLS with a CA of its own, a user, the copies below a prefix), the management cluster
		// pointed at it with a user who may only pull, the first registry stopped. The
		// replacement node of the next steps but one pulls every image (the Pod sandbox, CoreDNS, hello-flotilla) from the mirror, which
		// stays until the real-node steps end (t.Cleanup of the parent).
		archivePath := filepath.Join(out, "flotilla-packages.tar")
		_, err := c.ExportPackages(ctx, client.ExportPackagesOptions{
			Registry: addr, Repository: published.Repository, Connection: registryconn.Config{PlainHTTP: true}, Path: archivePath,
		})
		g.Expect(err).NotTo(HaveOccurred())
		second, err := charttest.StartSecureRegistry()
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(second.Close)
		mirror := second.Host + "/air-gap"
		secondConn := registryconn.Config{Username: second.Username, Password: second.Password, CAData: second.CAPEM}
		_, err = c.ImportPackages(ctx, archive.ImportOptions{Path: archivePath, Registry: mirror, Connection: secondConn})
		g.Expect(err).NotTo(HaveOccurred())

		credentials := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: registrymirror.Key.Namespace, Name: "air-gap-mirror"},
			// The nodes hold these credentials: a user who may only pull.
			Data: map[string][]byte{registrymirror.UsernameKey: []byte(second.Puller), registrymirror.PasswordKey: []byte(second.PullerPassword),
				registrymirror.CAKey: second.CAPEM},
		}
		g.Expect(f.admin.Create(ctx, credentials)).To(Succeed())
		// First a mirror on another machine: real nodes cannot reach it, and their LocalMachine says so.
		mirrorConfig := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: registrymirror.Key.Namespace, Name: registrymirror.Key.Name},
			Data:       map[string]string{flotillav1.RegistryMirrorRegistryKey: "mirror.example.com/air-gap", flotillav1.RegistryMirrorCredentialsSecretKey: credentials.Name},
		}
		g.Expect(f.admin.Create(ctx, mirrorConfig)).To(Succeed())
		t.Cleanup(func() {
			_ = f.admin.Delete(context.Background(), mirrorConfig)
			_ = f.admin.Delete(context.Background(), credentials)
		})
		g.Eventually(func(g Gomega) {
			lm := &infrav1.LocalMachine{}
			g.Expect(f.admin.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: realNode.Spec.InfrastructureRef.Name}, lm)).To(Succeed())
			running := conditions.Get(lm, infrav1.ProcessesRunningCondition)
			g.Expect(running).NotTo(BeNil())
			g.Expect(running.Reason).To(Equal(infrav1.ImageMirrorUnusableReason))
			g.Expect(running.Message).To(ContainSubstring("flotilla registry serve --listen 127.0.0.1:<port>"))
		}, time.Minute, 500*time.Millisecond).Should(Succeed())

		mirrorConfig.Data[flotillav1.RegistryMirrorRegistryKey] = mirror
		g.Expect(f.admin.Update(ctx, mirrorConfig)).To(Succeed())
		g.Expect(c.StopRegistry(ctx)).To(Succeed())
		start := time.Now()
		hostsTOML := filepath.Join(realnode.NodesDir(clusterDir), realNode.Name, "certs.d", "docker.io", "hosts.toml")
		g.Eventually(func(g Gomega) {
			data, err := os.ReadFile(hostsTOML)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(data)).To(ContainSubstring(`server = "https://` + second.Host + `/v2/air-gap/docker.io"`))
		}, time.Minute, 500*time.Millisecond).Should(Succeed())
		st.Logf("the running node follows the mirror %s after it was set", time.Since(start).Round(time.Millisecond))

		// An addon from the stopped registry's address: its chart comes from the mirror, and
		// its Pod, on the real node, is Ready (Helm waits) with its image from the mirror.
		start = time.Now()
		addon := &addonsv1.HelmChartProxy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "mirrored-addon"},
			Spec: addonsv1.HelmChartProxySpec{
				ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{flotillav1.ClusterNameLabel: workload}},
				ValuesTemplate:  "nodeSelector:\n  flotilla.dev/simulated: \"false\"\n",
				ReleaseSpec: addonsv1.ReleaseSpec{
					ChartName: "hello-flotilla", RepoURL: "oci://" + addr + "/" + published.Repository, Namespace: "mirrored-addon",
					Registry: &addonsv1.RegistryOptions{PlainHTTP: true}, Options: addonsv1.HelmOptions{Wait: true},
				},
			},
		}
		g.Expect(f.admin.Create(ctx, addon)).To(Succeed())
		t.Cleanup(func() { _ = f.admin.Delete(context.Background(), addon) })
		g.Eventually(func(g Gomega) {
			g.Expect(f.admin.Get(ctx, ctrlclient.ObjectKeyFromObject(addon), addon)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(addon.Status.Conditions, addonsv1.ReadyCondition)).To(BeTrue(), "%+v", addon.Status.Conditions)
		}, 3*time.Minute, time.Second).Should(Succeed())
		pods, err := cs.CoreV1().Pods("mirrored-addon").List(ctx, metav1.ListOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).NotTo(BeEmpty())
		for _, p := range pods.Items {
			g.Expect(p.Spec.NodeName).To(Equal(realNode.Name))
			g.Expect(realnodetest.PodReady(&p)).To(BeTrue())
		}
		st.Logf("an addon from the stopped registry's address is Ready on the real node, from the mirror, in %s", time.Since(start).Round(time.Millisecond))
	})

	t.Run("a killed kubelet and containerd are started again by the manager, and the Pod keeps its container", func(t *testing.T) {
		g := NewWithT(t)
		nodeDir := filepath.Join(realnode.NodesDir(clusterDir), realNode.Name)
		keeper := process.Keeper{RunDir: filepath.Join(nodeDir, "run"), LogDir: filepath.Join(nodeDir, "logs")}
		containerID := pod.Status.ContainerStatuses[0].ContainerID
		killed := map[string]int{}
		for _, name := range []string{binaries.Kubelet, binaries.Containerd} {
			pid, running := keeper.Running(name)
			g.Expect(running).To(BeTrue(), name)
			g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
			killed[name] = pid
		}
		start := time.Now()
		g.Eventually(func(g Gomega) {
			for name, old := range killed {
				pid, running := keeper.Running(name)
				g.Expect(running).To(BeTrue(), "%s runs again", name)
				g.Expect(pid).NotTo(Equal(old))
			}
			n, err := cs.CoreV1().Nodes().Get(ctx, realNode.Name, metaGet)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(nodeReady(n)).To(BeTrue())
			got, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metaGet)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(realnodetest.PodReady(got)).To(BeTrue())
			g.Expect(got.Status.ContainerStatuses[0].ContainerID).To(Equal(containerID), "the shim kept the container running")
			lm := &infrav1.LocalMachine{}
			g.Expect(f.admin.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: realNode.Spec.InfrastructureRef.Name}, lm)).To(Succeed())
			g.Expect(conditions.IsTrue(lm, infrav1.ProcessesRunningCondition)).To(BeTrue())
		}, time.Minute, 500*time.Millisecond).Should(Succeed())
		t.Logf("kubelet and containerd run again and the node is Ready %s after they were killed", time.Since(start).Round(time.Millisecond))
	})

	t.Run("deleting the real Machine drains its Node with evictions, and a new real node takes the Pod", func(t *testing.T) {
		g := NewWithT(t)
		// A finalizer of this test keeps the evicted Pod visible, with the condition eviction sets.
		const hold = "e2e.flotilla.dev/hold"
		pod.Finalizers = append(pod.Finalizers, hold)
		pod, err = cs.CoreV1().Pods(pod.Namespace).Update(ctx, pod, metaUpdate)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(f.admin.Delete(ctx, realNode)).To(Succeed())
		g.Eventually(func(g Gomega) {
			got, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metaGet)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.DeletionTimestamp).NotTo(BeNil())
			g.Expect(realnodetest.DisruptionReason(got)).To(Equal("EvictionByEvictionAPI"))
		}, 2*time.Minute, 200*time.Millisecond).Should(Succeed())
		g.Eventually(func() error {
			got, err := cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metaGet)
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			got.Finalizers = nil
			_, err = cs.CoreV1().Pods(pod.Namespace).Update(ctx, got, metaUpdate)
			return err
		}, 30*time.Second, time.Second).Should(Succeed())

		start := time.Now()
		g.Eventually(func(g Gomega) {
			replacement := realNodeOf(ctx, g, f.admin, workload)
			g.Expect(replacement.Name).NotTo(Equal(realNode.Name))
			moved := helloPod(ctx, g, cs, pod.Name)
			g.Expect(moved.Spec.NodeName).To(Equal(replacement.Name))
			g.Expect(realnodetest.PodReady(moved)).To(BeTrue())
			pod = moved
		}, 3*time.Minute, time.Second).Should(Succeed())
		t.Logf("the Pod runs on the replacement real node %s %s after the drain", pod.Spec.NodeName, time.Since(start).Round(time.Millisecond))
		g.Expect(realnodetest.HostTraces(clusterDir, realNode.Name)).To(BeEmpty(), "the deleted node left nothing on the host")
	})

	t.Run("deleting the cluster leaves no process, namespace, mount, interface, iptables rule or cgroup", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(realnodetest.HostTraces(clusterDir, pod.Spec.NodeName)).NotTo(BeEmpty(), "a running node is seen")
		g.Expect(c.DeleteWorkloadCluster(ctx, client.DeleteWorkloadClusterOptions{Name: workload, Namespace: "default", Kubeconfig: f.kubeconfig, OutDir: out})).To(Succeed())
		deleted = true
		g.Expect(realnodetest.HostTraces(clusterDir, pod.Spec.NodeName)).To(BeEmpty())
		g.Expect(realnodetest.ClusterTraces(clusterDir)).To(BeEmpty())
	})
}

var (
	metaGet    = metav1.GetOptions{}
	metaUpdate = metav1.UpdateOptions{}
)

// realNodeOf returns the Machine of the cluster's real node (the Node has its name); there is
// one that is not being deleted.
func realNodeOf(ctx context.Context, g Gomega, admin ctrlclient.Client, cluster string) *clusterv1.Machine {
	machines := &infrav1.LocalMachineList{}
	g.Expect(admin.List(ctx, machines, ctrlclient.InNamespace("default"), ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: cluster})).To(Succeed())
	var real []*clusterv1.Machine
	for _, m := range machines.Items {
		if m.Spec.Node != infrav1.RealNode || !m.DeletionTimestamp.IsZero() {
			continue
		}
		for _, owner := range m.OwnerReferences {
			if owner.Kind == "Machine" {
				machine := &clusterv1.Machine{}
				g.Expect(admin.Get(ctx, ctrlclient.ObjectKey{Namespace: m.Namespace, Name: owner.Name}, machine)).To(Succeed())
				real = append(real, machine)
			}
		}
	}
	g.Expect(real).To(HaveLen(1))
	return real[0]
}

// helloPod returns hello-flotilla's Pod, other than the one named not.
func helloPod(ctx context.Context, g Gomega, cs kubernetes.Interface, not string) *corev1.Pod {
	return realnodetest.OnePod(ctx, g, cs, packagesv1.DefaultTargetNamespace, "app.kubernetes.io/name=hello-flotilla", not)
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// readySince says how long after since the Node became Ready (to the second, as the API keeps it).
func readySince(n *corev1.Node, since time.Time) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Sub(since).String()
		}
	}
	return "(not Ready)"
}

// portForwardGet forwards a local port to the Pod's port 8080, as `kubectl port-forward` does to
// the Service's target port, and returns the body of GET /.
func portForwardGet(ctx context.Context, g Gomega, rc *rest.Config, pod *corev1.Pod) string {
	transport, upgrader, err := spdy.RoundTripperFor(rc)
	g.Expect(err).NotTo(HaveOccurred())
	url := kubernetes.NewForConfigOrDie(rc).CoreV1().RESTClient().Post().
		Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	var logs bytes.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, &logs, &logs)
	g.Expect(err).NotTo(HaveOccurred())
	errs := make(chan error, 1)
	go func() { errs <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errs:
		g.Expect(err).NotTo(HaveOccurred(), logs.String())
	case <-time.After(30 * time.Second):
		g.Expect("port-forward").To(Equal("ready within 30s"), logs.String())
	}
	ports, err := fw.GetPorts()
	g.Expect(err).NotTo(HaveOccurred())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local), nil)
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred(), logs.String())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return string(body)
}

// execIn runs command in the Pod's first container, as `kubectl exec` does.
func execIn(ctx context.Context, rc *rest.Config, cs kubernetes.Interface, pod *corev1.Pod, command ...string) (string, string, error) {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: pod.Spec.Containers[0].Name, Command: command, Stdout: true, Stderr: true}, clientgoscheme.ParameterCodec)
	executor, err := remotecommand.NewSPDYExecutor(rc, http.MethodPost, req.URL())
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}
