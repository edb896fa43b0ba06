package client

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/spec"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/internal/version"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// TestCreatingALocalClusterWhoseBinariesAreNotBuiltFailsAtSetupAndValidate plays a management
// cluster that runs on this machine (a real API server; its manager a stand-in process, since
// nothing past SetupAndValidate may run) with an empty binary cache: creating a workload cluster
// at a Kubernetes version whose programs are not built fails at once, saying how to build them,
// and creates nothing.
func TestCreatingALocalClusterWhoseBinariesAreNotBuiltFailsAtSetupAndValidate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})

	binRoot := t.TempDir()
	var out bytes.Buffer
	c, err := New(t.TempDir(), binRoot, &out)
	g.Expect(err).NotTo(HaveOccurred())
	c.Version = "v0.0.0-dev"

	// The management cluster "mgmt", as this machine's flotilla created it: its Cluster, the
	// version its manager records, its admin kubeconfig under the Home, and a running manager.
	g.Expect(e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: version.PublicNamespace}})).To(Or(Succeed(), MatchError(ContainSubstring("already exists"))))
	g.Expect(e.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: version.PublicNamespace, Name: version.ConfigMapName},
		Data:       map[string]string{version.ConfigMapKey: c.Version},
	})).To(Succeed())
	g.Expect(e.Client.Create(ctx, &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "mgmt", Namespace: "default"},
		Spec: flotillav1.ClusterSpec{
			Management: true, KubernetesVersion: "1.36", ControlPlane: flotillav1.ControlPlaneConfiguration{Count: 1},
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "mgmt"},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	})).To(Succeed())
	g.Expect(os.MkdirAll(c.clusterDir("mgmt"), 0o700)).To(Succeed())
	g.Expect(os.WriteFile(c.localKubeconfigPath("mgmt"), e.Kubeconfig, 0o600)).To(Succeed())
	_, err = c.supervisor("mgmt").Start(ctx, process.Spec{Name: managerProcess, Path: "/bin/sleep", Args: []string{"600"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.supervisor("mgmt").Stop(context.Background(), managerProcess, 5*time.Second) })

	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "mgmt.kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, e.Kubeconfig, 0o600)).To(Succeed())
	specFile := filepath.Join(dir, "w1.yaml")
	generated, err := spec.Generate(spec.GenerateOptions{Name: "w1", Provider: spec.ProviderLocal, KubernetesVersion: "1.35", Workers: 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(specFile, generated, 0o600)).To(Succeed())

	start := time.Now()
	err = c.CreateWorkloadCluster(ctx, CreateWorkloadClusterOptions{File: specFile, Kubeconfig: kubeconfig, OutDir: dir})
	g.Expect(err).To(MatchError(ContainSubstring(`management cluster "mgmt" runs on this machine and cannot start Kubernetes v1.35.4`)))
	g.Expect(err).To(MatchError(ContainSubstring("run: flotilla binaries build v1.35.4 --bin-dir " + binRoot)))
	g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second), "it fails at once, without waiting for the cluster")
	g.Expect(out.String()).To(ContainSubstring("SetupAndValidate"))
	g.Expect(out.String()).NotTo(ContainSubstring("CreateWorkloadCluster"), "no phase after SetupAndValidate ran")
	list := &flotillav1.ClusterList{}
	g.Expect(e.Client.List(ctx, list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1), "only the management cluster exists: nothing was applied")
}
