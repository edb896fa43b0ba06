package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
)

// testUpgradeManagementCluster upgrades the fleet's management cluster from Kubernetes 1.35 to
// 1.36 and from 2 to 3 workers with `flotilla upgrade cluster -f mgmt.yaml` (no --kubeconfig),
// while a workload cluster it manages keeps running.
func testUpgradeManagementCluster(t *testing.T, f *fleet) {
	g := NewWithT(t)
	ctx := t.Context()
	out := t.TempDir()
	var progress bytes.Buffer
	c := newClient(t, f.home, &progress)

	const workload = "kept"
	keptSpec := writeClusterSpec(t, filepath.Join(out, workload+".yaml"),
		spec.GenerateOptions{Name: workload, Provider: spec.ProviderLocal, KubernetesVersion: "1.35", Workers: 1})
	g.Expect(c.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: keptSpec, Kubeconfig: f.kubeconfig, OutDir: out})).To(Succeed(), progress.String())
	t.Cleanup(func() {
		_ = c.DeleteWorkloadCluster(context.Background(), client.DeleteWorkloadClusterOptions{
			Name: workload, Namespace: "default", Kubeconfig: f.kubeconfig, OutDir: out,
		})
	})
	keptBefore := runningPIDs(t, filepath.Join(f.home, "clusters", workload))
	g.Expect(keptBefore).To(HaveKey("kube-apiserver"))

	upgraded := writeClusterSpec(t, filepath.Join(out, "mgmt.yaml"),
		spec.GenerateOptions{Name: "mgmt", Provider: spec.ProviderLocal, Management: true, KubernetesVersion: "1.36", Workers: 3})
	progress.Reset()
	start := time.Now()
	err := c.UpgradeManagementCluster(ctx, client.UpgradeManagementClusterOptions{File: upgraded, OutDir: f.out})
	t.Logf("upgrade output:\n%s", progress.String())
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("management cluster 1.35 → 1.36 with 2 → 3 workers in %s", time.Since(start).Round(time.Millisecond))

	t.Run("every phase ran, through a bootstrap cluster that is gone", func(t *testing.T) {
		g := NewWithT(t)
		for _, phase := range []string{"SetupAndValidate", "CreateBootstrapCluster", "InstallComponents", "MoveManagementToBootstrap",
			"UpgradeManagementCluster", "MoveManagementBack", "InstallComponentsOnManagement", "DeleteBootstrap"} {
			g.Expect(progress.String()).To(MatchRegexp(`✓ %s`, phase))
		}
		_, err := os.Stat(filepath.Join(f.home, "clusters", "mgmt-bootstrap"))
		g.Expect(os.IsNotExist(err)).To(BeTrue(), "bootstrap data left behind")
	})

	t.Run("the management cluster runs 1.36 with 3 workers, manages itself and keeps its kubeconfig", func(t *testing.T) {
		g := NewWithT(t)
		expectWorkload(t, f.kubeconfig, "v1.36.3", 3)
		fc := &flotillav1.Cluster{}
		g.Expect(f.admin.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "mgmt"}, fc)).To(Succeed())
		g.Expect(fc.Spec.KubernetesVersion).To(Equal("1.36"))
		g.Expect(meta.IsStatusConditionTrue(fc.Status.Conditions, flotillav1.ReadyCondition)).To(BeTrue())
		g.Expect(runningPIDs(t, filepath.Join(f.home, "clusters", "mgmt"))).To(HaveKey("manager"))
	})

	t.Run("the workload cluster kept running, untouched, and is managed by it again", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(runningPIDs(t, filepath.Join(f.home, "clusters", workload))).To(Equal(keptBefore))
		expectWorkload(t, client.UserKubeconfigPath(out, workload), "v1.35.4", 1)
		fc := &flotillav1.Cluster{}
		g.Eventually(func(g Gomega) {
			g.Expect(f.admin.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: workload}, fc)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(fc.Status.Conditions, flotillav1.ReadyCondition)).To(BeTrue())
		}, time.Minute, time.Second).Should(Succeed())
	})

	t.Run("the same spec again changes nothing and starts no bootstrap cluster", func(t *testing.T) {
		g := NewWithT(t)
		progress.Reset()
		g.Expect(c.UpgradeManagementCluster(ctx, client.UpgradeManagementClusterOptions{File: upgraded, OutDir: f.out})).To(Succeed())
		g.Expect(progress.String()).To(ContainSubstring(`Nothing to change: management cluster "mgmt" already matches`))
		g.Expect(progress.String()).To(MatchRegexp(`○ CreateBootstrapCluster`))
	})

	t.Run("a downgrade is refused with the webhook's reason", func(t *testing.T) {
		g := NewWithT(t)
		err := c.UpgradeManagementCluster(ctx, client.UpgradeManagementClusterOptions{File: f.specFile, OutDir: f.out})
		g.Expect(err).To(MatchError(ContainSubstring("downgrades are not supported")))
		_, statErr := os.Stat(filepath.Join(f.home, "clusters", "mgmt-bootstrap"))
		g.Expect(os.IsNotExist(statErr)).To(BeTrue())
	})
}
