package inmemory_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctl "sigs.k8s.io/cluster-api/cmd/clusterctl/client"
	devv1 "sigs.k8s.io/cluster-api/test/infrastructure/docker/api/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// clusterctl, used as a library as the CLI uses it, works against a management cluster with
// in-memory clusters: describe shows the topology cluster's tree, and move carries it to another
// management cluster with its ClusterClass and templates, and the Flotilla Cluster with it.
//
// The management cluster runs kube-controller-manager's garbage collector, as a management
// cluster of the local provider does: Cluster API's topology controller gives the DevCluster and
// the KubeadmControlPlane a temporary owner (the cluster's shim Secret) and deletes it once the
// Cluster owns them, leaving the collector to drop the reference. clusterctl move moves an
// object only after all its owners, so without the collector it would leave both behind.
func TestClusterctlDescribesAndMovesAClusterClassCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	startGarbageCollector(t, g)
	g.Expect(client.InstallComponents(ctx, c)).To(Succeed())
	cl := createCluster(t, g, "m1", "1.36", 1)
	waitReady(g, cl)
	g.Eventually(func(g Gomega) {
		for _, list := range []ctrlclient.ObjectList{&devv1.DevClusterList{}, &kubeadmcontrolplanev1.KubeadmControlPlaneList{}} {
			g.Expect(c.List(ctx, list, ctrlclient.InNamespace(cl.Namespace))).To(Succeed())
			items, err := meta.ExtractList(list)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(items).NotTo(BeEmpty())
			for _, item := range items {
				for _, owner := range item.(ctrlclient.Object).GetOwnerReferences() {
					g.Expect(owner.Kind).NotTo(Equal("Secret"), "the shim's reference is collected")
				}
			}
		}
	}, readyTimeout, interval).Should(Succeed())
	from := writeKubeconfig(t, "from", env.Kubeconfig)
	cc, err := clusterctl.New(ctx, "")
	g.Expect(err).NotTo(HaveOccurred())

	t.Run("describe shows the topology cluster with its infrastructure, control plane and workers", func(t *testing.T) {
		g := NewWithT(t)
		tree, err := cc.DescribeCluster(ctx, clusterctl.DescribeClusterOptions{
			Kubeconfig: clusterctl.Kubeconfig{Path: from}, Namespace: cl.Namespace, ClusterName: cl.Name,
		})
		g.Expect(err).NotTo(HaveOccurred())
		root, ok := tree.GetRoot().(*clusterv1.Cluster)
		g.Expect(ok).To(BeTrue())
		g.Expect(root.Spec.Topology.ClassRef.Name).To(Equal(spec.InMemoryClusterClass))
		var kinds []string
		for _, child := range tree.GetObjectsByParent(root.UID) {
			kinds = append(kinds, child.GetObjectKind().GroupVersionKind().Kind)
		}
		g.Expect(kinds).To(ContainElements("DevCluster", "KubeadmControlPlane"))
	})

	t.Run("move carries the cluster, its class and templates, and the Flotilla Cluster", func(t *testing.T) {
		g := NewWithT(t)
		target, err := testenv.Start(testenv.Options{})
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { g.Expect(target.Stop()).To(Succeed()) }()
		g.Expect(devv1.AddToScheme(target.Scheme)).To(Succeed())
		tc, err := ctrlclient.New(target.Config, ctrlclient.Options{Scheme: target.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(client.InstallComponents(ctx, tc)).To(Succeed())
		to := writeKubeconfig(t, "to", target.Kubeconfig)

		g.Expect(cc.Move(ctx, clusterctl.MoveOptions{
			FromKubeconfig: clusterctl.Kubeconfig{Path: from}, ToKubeconfig: clusterctl.Kubeconfig{Path: to}, Namespace: cl.Namespace,
		})).To(Succeed())

		key := ctrlclient.ObjectKeyFromObject(cl)
		for _, obj := range []ctrlclient.Object{&flotillav1.Cluster{}, &clusterv1.Cluster{}} {
			g.Expect(tc.Get(ctx, key, obj)).To(Succeed(), "%T moved", obj)
			g.Expect(apierrors.IsNotFound(c.Get(ctx, key, obj))).To(BeTrue(), "%T gone from the source", obj)
		}
		g.Expect(tc.Get(ctx, ctrlclient.ObjectKey{Namespace: cl.Namespace, Name: spec.InMemoryClusterClass}, &clusterv1.ClusterClass{})).To(Succeed())
		for _, list := range []ctrlclient.ObjectList{&devv1.DevClusterList{}, &devv1.DevMachineList{}, &devv1.DevMachineTemplateList{},
			&kubeadmcontrolplanev1.KubeadmControlPlaneList{}, &clusterv1.MachineDeploymentList{}, &clusterv1.MachineList{}} {
			g.Expect(tc.List(ctx, list, ctrlclient.InNamespace(cl.Namespace))).To(Succeed())
			g.Expect(list).To(HaveField("Items", Not(BeEmpty())), "%T moved", list)
		}
		machines := &clusterv1.MachineList{}
		g.Expect(tc.List(ctx, machines, ctrlclient.InNamespace(cl.Namespace))).To(Succeed())
		g.Expect(machines.Items).To(HaveLen(2))
	})
}

// startGarbageCollector runs kube-controller-manager's garbage collector against the management
// cluster until the test ends.
func startGarbageCollector(t *testing.T, g Gomega) {
	t.Helper()
	kubeconfig := writeKubeconfig(t, "gc", env.Kubeconfig)
	cmd := exec.Command(filepath.Join(env.BinaryDir, binaries.KubeControllerManager), //nolint:gosec // the cached binary
		"--kubeconfig="+kubeconfig, "--controllers=garbagecollector", "--secure-port=0", "--leader-elect=false", "--profiling=false")
	log, err := os.Create(filepath.Join(t.TempDir(), "kube-controller-manager.log"))
	g.Expect(err).NotTo(HaveOccurred())
	cmd.Stdout, cmd.Stderr = log, log
	g.Expect(cmd.Start()).To(Succeed())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
	})
}

func writeKubeconfig(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name+".kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
