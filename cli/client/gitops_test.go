package client

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// gitopsSpec is a workload cluster spec naming GitOpsConfig "fleet" in namespace ns, with the
// GitOpsConfig document (pulling repository) when repository is not empty.
func gitopsSpec(t *testing.T, ns, repository string, workers int) *spec.Spec {
	t.Helper()
	data := `apiVersion: cluster.flotilla.dev/v1alpha1
kind: Cluster
metadata: {name: w1, namespace: NS}
spec:
  kubernetesVersion: "1.36"
  datacenterRef: {kind: LocalDatacenterConfig, name: w1}
  workerNodeGroups:
    - {name: md-0, count: WORKERS, machineGroupRef: {kind: LocalMachineConfig, name: w1-workers}}
  gitOpsRef: {kind: GitOpsConfig, name: fleet}
---
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalDatacenterConfig
metadata: {name: w1, namespace: NS}
---
apiVersion: infrastructure.flotilla.dev/v1alpha1
kind: LocalMachineConfig
metadata: {name: w1-workers, namespace: NS}
spec: {capacity: {cpu: "2"}}
`
	if repository != "" {
		data += "---\napiVersion: cluster.flotilla.dev/v1alpha1\nkind: GitOpsConfig\nmetadata: {name: fleet, namespace: NS}\nspec: {repository: " + repository + "}\n"
	}
	data = strings.ReplaceAll(data, "NS", ns)
	data = strings.ReplaceAll(data, "WORKERS", string(rune('0'+workers)))
	s, err := spec.Parse("w1.yaml", []byte(data))
	if err != nil {
		t.Fatalf("parsing the test spec: %v", err)
	}
	return s
}

func TestRenderedClusterSpecsLoadAsTheyWereWritten(t *testing.T) {
	g := NewWithT(t)
	s := gitopsSpec(t, "fleet", "/srv/fleet.git", 2)
	out, err := renderClusterSpec(s, "mgmt", s.GitOpsConfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(HavePrefix("# Cluster spec of workload cluster w1, managed by management cluster mgmt, committed by flotilla.\n" +
		"# Management cluster mgmt applies what is committed here every 1m0s (GitOpsConfig fleet/fleet):\n" +
		"# change a worker count, commit, and the cluster scales.\n---\napiVersion: cluster.flotilla.dev/v1alpha1\nkind: Cluster\n"))

	loaded, err := spec.Parse("cluster.yaml", out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(loaded.Cluster.Spec.ManagementCluster.Name).To(Equal("mgmt"), "the directory's management cluster is written down")
	g.Expect(s.Cluster.Spec.ManagementCluster.Name).To(BeEmpty(), "the caller's spec is left as it was")
	g.Expect(loaded.Cluster.Spec.WorkerNodeGroups).To(Equal(s.Cluster.Spec.WorkerNodeGroups))
	g.Expect(loaded.GitOpsConfig.Spec).To(Equal(s.GitOpsConfig.Spec))
	g.Expect(loaded.Objects).To(HaveLen(len(s.Objects)))

	again, err := renderClusterSpec(s, "mgmt", s.GitOpsConfig)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(out))
}

func TestCommitAndRemoveClusterSpecs(t *testing.T) {
	e, err := testenv.Start(testenv.Options{})
	if err != nil {
		t.Fatalf("starting the test API server: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Errorf("stopping the test API server: %v", err)
		}
	})
	ctx := context.Background()
	var out bytes.Buffer
	c := &Client{Out: &out}

	newRepo := func(g Gomega) string {
		dir := t.TempDir()
		_, err := git.PlainInit(dir, true)
		g.Expect(err).NotTo(HaveOccurred())
		return dir
	}
	specAt := func(g Gomega, dir, path string) string {
		repo, err := git.PlainOpen(dir)
		g.Expect(err).NotTo(HaveOccurred())
		ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
		g.Expect(err).NotTo(HaveOccurred())
		commit, err := repo.CommitObject(ref.Hash())
		g.Expect(err).NotTo(HaveOccurred())
		f, err := commit.File(path)
		if err != nil {
			return "<missing>"
		}
		content, err := f.Contents()
		g.Expect(err).NotTo(HaveOccurred())
		return content
	}

	t.Run("the file's GitOpsConfig is created in the management cluster and the spec committed, once", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.NewNamespace(t)
		dir := newRepo(g)
		s := gitopsSpec(t, ns, dir, 2)
		out.Reset()

		g.Expect(c.commitClusterSpec(ctx, e.Client, s, "mgmt")).To(Succeed())
		live := &flotillav1.GitOpsConfig{}
		g.Expect(e.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "fleet"}, live)).To(Succeed())
		g.Expect(live.Spec.Repository).To(Equal(dir))
		// The namespace's GitOps applier may create clusters there: the management cluster
		// applies the repository's specs with its rights.
		binding := &rbacv1.RoleBinding{}
		g.Expect(e.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: flotillav1.GitOpsApplierServiceAccount + "-cluster-creator"}, binding)).To(Succeed())
		g.Expect(binding.RoleRef.Name).To(Equal(config.ClusterCreatorRoleName))
		g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: flotillav1.GitOpsApplierServiceAccount}))
		committed := specAt(g, dir, "clusters/mgmt/workload-clusters/w1/cluster.yaml")
		g.Expect(committed).To(ContainSubstring("count: 2"))
		g.Expect(out.String()).To(MatchRegexp(`Committed the spec of cluster "w1" to .* \(branch main\) as clusters/mgmt/workload-clusters/w1/cluster.yaml \(commit [0-9a-f]{7}\)`))

		out.Reset()
		g.Expect(c.commitClusterSpec(ctx, e.Client, s, "mgmt")).To(Succeed())
		g.Expect(out.String()).To(ContainSubstring(`already holds the spec of cluster "w1"`))

		t.Run("a spec without the GitOpsConfig uses the management cluster's", func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(c.commitClusterSpec(ctx, e.Client, gitopsSpec(t, ns, "", 3), "mgmt")).To(Succeed())
			g.Expect(specAt(g, dir, "clusters/mgmt/workload-clusters/w1/cluster.yaml")).To(ContainSubstring("count: 3"))
		})

		t.Run("a spec whose GitOpsConfig differs from the management cluster's is refused", func(t *testing.T) {
			g := NewWithT(t)
			err := c.commitClusterSpec(ctx, e.Client, gitopsSpec(t, ns, "/srv/elsewhere.git", 3), "mgmt")
			g.Expect(err).To(MatchError(ContainSubstring(`w1.yaml: GitOpsConfig "fleet" differs from the management cluster's (repository ` + dir + `, branch main)`)))
		})

		t.Run("deleting the cluster removes its directory from Git, once", func(t *testing.T) {
			g := NewWithT(t)
			fc := s.Cluster.DeepCopy()
			fc.Spec.ManagementCluster.Name = "mgmt"
			out.Reset()
			g.Expect(c.removeClusterSpec(ctx, e.Client, fc)).To(Succeed())
			g.Expect(specAt(g, dir, "clusters/mgmt/workload-clusters/w1/cluster.yaml")).To(Equal("<missing>"))
			g.Expect(out.String()).To(ContainSubstring(`Removed cluster "w1" from ` + dir))
			out.Reset()
			g.Expect(c.removeClusterSpec(ctx, e.Client, fc)).To(Succeed())
			g.Expect(out.String()).To(BeEmpty())
		})
	})

	t.Run("the management cluster's name is read from the Cluster when the caller does not know it", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.NewNamespace(t)
		dir := newRepo(g)
		s := gitopsSpec(t, ns, dir, 1)
		live := s.Cluster.DeepCopy()
		live.Spec.ManagementCluster.Name = "mgmt2"
		g.Expect(e.Client.Create(ctx, live)).To(Succeed())
		g.Expect(c.commitClusterSpec(ctx, e.Client, s, "")).To(Succeed())
		g.Expect(specAt(g, dir, "clusters/mgmt2/workload-clusters/w1/cluster.yaml")).To(ContainSubstring("name: mgmt2"))
	})

	t.Run("a gitOpsRef naming a GitOpsConfig nobody has is an error saying what to do", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.NewNamespace(t)
		err := c.commitClusterSpec(ctx, e.Client, gitopsSpec(t, ns, "", 1), "mgmt")
		g.Expect(err).To(MatchError(ContainSubstring(`w1.yaml: spec.gitOpsRef names GitOpsConfig "fleet", which namespace "` + ns +
			`" of the management cluster does not have: add the GitOpsConfig to the file, or name the management cluster's`)))
	})

	t.Run("a cluster without gitOpsRef is left out of Git", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.NewNamespace(t)
		s := gitopsSpec(t, ns, "", 1)
		s.Cluster.Spec.GitOpsRef = nil
		out.Reset()
		g.Expect(c.commitClusterSpec(ctx, e.Client, s, "mgmt")).To(Succeed())
		g.Expect(c.removeClusterSpec(ctx, e.Client, s.Cluster)).To(Succeed())
		g.Expect(out.String()).To(BeEmpty())
	})

	t.Run("deleting a cluster whose GitOpsConfig is gone says so and goes on", func(t *testing.T) {
		g := NewWithT(t)
		ns := e.NewNamespace(t)
		fc := &flotillav1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: ns},
			Spec:       flotillav1.ClusterSpec{GitOpsRef: &flotillav1.Ref{Kind: flotillav1.GitOpsConfigKind, Name: "fleet"}},
		}
		out.Reset()
		g.Expect(c.removeClusterSpec(ctx, e.Client, fc)).To(Succeed())
		g.Expect(out.String()).To(ContainSubstring(`GitOpsConfig "fleet" no longer exists in namespace "` + ns + `": cluster "w1"'s spec is not removed from Git`))
	})
}
