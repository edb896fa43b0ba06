package gitops_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
	"github.com/flotilla-dev/flotilla/config"
)

// newRepository is a bare repository in a temporary directory and a function that commits the
// spec of workload cluster name under management cluster mgmt to it.
func newRepository(t *testing.T, g Gomega, name string) (string, func(spec []byte)) {
	t.Helper()
	dir := t.TempDir()
	_, err := git.PlainInit(dir, true)
	g.Expect(err).NotTo(HaveOccurred())
	writer := gitopsrepo.Repository{URL: dir}
	return dir, func(spec []byte) {
		_, err := writer.PutCluster(context.Background(), "mgmt", name, spec)
		g.Expect(err).NotTo(HaveOccurred())
	}
}

// expectSyncFailure waits until the GitOpsConfig's Ready condition is False, SyncFailed, with a
// message holding each of texts.
func expectSyncFailure(g Gomega, gc *flotillav1.GitOpsConfig, texts ...string) {
	g.Eventually(func(g Gomega) {
		ready, _ := readyOf(g, gc)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(flotillav1.SyncFailedReason))
		for _, text := range texts {
			g.Expect(ready.Message).To(ContainSubstring(text))
		}
	}, timeout, interval).Should(Succeed())
}

// Attacks through a GitOps repository. Its writers are trusted with what the applier of the
// GitOpsConfig's namespace may do, which is what an admin binds to it, and nothing that the
// reconciler's own identity (allowed to impersonate the appliers) or an admin may besides. The
// reconciler runs as the restricted identity system:serviceaccount:flotilla-system:gitops.

// TestARepositoryWhoseApplierIsNotBoundAppliesNothing: the reconciler's own identity cannot write
// Clusters; an admin who did not bind the namespace's applier gets a message that says how, and
// nothing is created until she does.
func TestARepositoryWhoseApplierIsNotBoundAppliesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	dir, commit := newRepository(t, g, "unbound")
	commit(workloadSpec(ns, "unbound", 1, "unbound"))
	gc := createUnboundGitOpsConfig(t, g, ns, "file://"+dir)

	expectSyncFailure(g, gc, "forbidden", "system:serviceaccount:"+ns+":flotilla-gitops",
		"kubectl create rolebinding flotilla-gitops-cluster-creator --namespace "+ns+" --clusterrole flotilla-cluster-creator --serviceaccount "+ns+":flotilla-gitops")
	err := env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "unbound"}, &flotillav1.Cluster{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is applied: %v", err)

	g.Expect(config.InstallGitOpsApplier(ctx, env.Client, ns)).To(Succeed())
	expectWorkers(g, ns, "unbound", 1)
}

// TestARepositoryCannotDoWhatOnlyAdminsMay: a commit asking for what only an admin may (here a
// local control plane serving on every interface, rule 4 of docs/security.md) is refused by
// the Cluster webhook, which sees the applier, not an admin, as the requester; nothing is
// created.
func TestARepositoryCannotDoWhatOnlyAdminsMay(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t)
	dir, commit := newRepository(t, g, "exposed")
	exposed := strings.Replace(string(workloadSpec(ns, "exposed", 1, "exposed")),
		"spec:\n  kubernetesVersion", "spec:\n  controlPlane:\n    endpoint:\n      host: 0.0.0.0\n      port: 16443\n  kubernetesVersion", 1)
	commit([]byte(exposed))
	gc := createGitOpsConfig(t, g, ns, "file://"+dir)

	expectSyncFailure(g, gc, "spec.controlPlane.endpoint.host", `only an admin may let a local control plane serve on "0.0.0.0"`)
	err := env.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: "exposed"}, &flotillav1.Cluster{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is applied: %v", err)
}
