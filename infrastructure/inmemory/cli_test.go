package inmemory_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	devv1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
)

// A user of the CLI creates, upgrades and deletes an in-memory cluster through a management
// cluster elsewhere (its kubeconfig only), with the spec `flotilla generate clusterconfig
// --provider inmemory` prints: `flotilla create cluster` waits until it is Ready and writes its
// kubeconfig; `flotilla upgrade cluster` runs its phases, pausing the cluster while it changes
// the version and the workers through the topology, and waits for the rollout; `flotilla delete
// cluster` deletes it and its machines.
func TestTheCLICreatesUpgradesAndDeletesAnInMemoryCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	dir := t.TempDir()
	kubeconfig := writeKubeconfig(t, "mgmt", env.Kubeconfig)
	ensureManagementCluster(t, g)
	var out bytes.Buffer
	cli, err := client.New(t.TempDir(), t.TempDir(), &out)
	g.Expect(err).NotTo(HaveOccurred())
	cli.Version = managerVersion

	create := writeSpec(t, g, dir, "create.yaml", ns, "1.35", 1)
	g.Expect(cli.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: create, Kubeconfig: kubeconfig, OutDir: dir})).To(Succeed(), out.String())
	cl := &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "u1"}}
	waitReady(g, cl)
	workload, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "u1", "u1.kubeconfig"))
	g.Expect(err).NotTo(HaveOccurred(), "create cluster wrote the cluster's kubeconfig")
	wc, err := ctrlclient.New(workload, ctrlclient.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	nodes := &corev1.NodeList{}
	g.Expect(wc.List(ctx, nodes)).To(Succeed())
	g.Expect(nodes.Items).To(HaveLen(2), "the kubeconfig reaches the cluster, with its control plane and worker Nodes")

	t.Run("upgrade cluster moves the version and the workers through the topology, in its phases", func(t *testing.T) {
		g := NewWithT(t)
		out.Reset()
		upgrade := writeSpec(t, g, dir, "upgrade.yaml", ns, "1.36", 2)
		g.Expect(cli.UpgradeWorkloadCluster(ctx, client.UpgradeWorkloadClusterOptions{File: upgrade, Kubeconfig: kubeconfig, OutDir: dir})).To(Succeed(), out.String())
		t.Logf("flotilla upgrade cluster:\n%s", out.String())
		for _, phase := range []string{"SetupAndValidate", "PauseReconcile", "UpgradeWorkloadCluster", "UpdateClusterAndGitResources", "ResumeReconcile"} {
			g.Expect(out.String()).To(ContainSubstring(phase))
		}
		g.Expect(out.String()).To(ContainSubstring("control plane v1.35.4 → v1.36.3"), "the rollout is printed")
		g.Expect(out.String()).To(ContainSubstring("rolled out in"))
		g.Expect(out.String()).To(ContainSubstring(`Workload cluster "u1" runs Kubernetes v1.36.3 with 2 workers.`))
		g.Expect(filepath.Join(dir, "u1", ".upgrade-checkpoint.json")).NotTo(BeAnExistingFile(), "a finished run leaves no checkpoint")

		current := &flotillav1.Cluster{}
		g.Expect(c.Get(ctx, ctrlclient.ObjectKeyFromObject(cl), current)).To(Succeed())
		g.Expect(current.Annotations).NotTo(HaveKey(clusterv1.PausedAnnotation), "reconciliation is resumed")
		g.Expect(current.Status.KubernetesVersion).To(Equal("v1.36.3"))
		capi := &clusterv1.Cluster{}
		g.Expect(c.Get(ctx, ctrlclient.ObjectKeyFromObject(cl), capi)).To(Succeed())
		g.Expect(capi.Spec.Topology.Version).To(Equal("v1.36.3"))
		machines := &clusterv1.MachineList{}
		g.Expect(c.List(ctx, machines, ctrlclient.InNamespace(ns))).To(Succeed())
		var running []string
		for _, m := range machines.Items {
			if m.DeletionTimestamp.IsZero() {
				running = append(running, m.Name+"@"+m.Spec.Version)
				g.Expect(m.Spec.Version).To(Equal("v1.36.3"), "Machine %s", m.Name)
			}
		}
		g.Expect(running).To(HaveLen(3), "one control plane machine and two workers: %v", running)
	})

	t.Run("delete cluster deletes it and its machines", func(t *testing.T) {
		g := NewWithT(t)
		out.Reset()
		g.Expect(cli.DeleteWorkloadCluster(ctx, client.DeleteWorkloadClusterOptions{Name: "u1", Namespace: ns, Kubeconfig: kubeconfig, OutDir: dir})).To(Succeed(), out.String())
		g.Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(c.Get(ctx, ctrlclient.ObjectKeyFromObject(cl), &flotillav1.Cluster{}))).To(BeTrue())
			for _, list := range []ctrlclient.ObjectList{&clusterv1.MachineList{}, &devv1.DevMachineList{}, &devv1.DevClusterList{}} {
				g.Expect(c.List(ctx, list, ctrlclient.InNamespace(ns))).To(Succeed())
				g.Expect(list).To(HaveField("Items", BeEmpty()), "%T", list)
			}
		}, readyTimeout, interval).Should(Succeed())
	})
}

// writeSpec writes the spec of in-memory cluster u1 in namespace ns, as `flotilla generate
// clusterconfig u1 --provider inmemory` prints it, to dir/name.
func writeSpec(t *testing.T, g Gomega, dir, name, ns, version string, workers int32) string {
	t.Helper()
	data, err := spec.Generate(spec.GenerateOptions{Name: "u1", Provider: spec.ProviderInMemory, KubernetesVersion: version, Workers: workers})
	g.Expect(err).NotTo(HaveOccurred())
	data = []byte(strings.ReplaceAll(string(data), "namespace: default", "namespace: "+ns))
	path := filepath.Join(dir, name)
	g.Expect(os.WriteFile(path, data, 0o600)).To(Succeed())
	return path
}
