package gitops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// GitOpsConfigs reaching Git servers over HTTP on loopback: a real one (git http-backend) and
// one that accepts connections and never answers.

// servedRepository commits the spec of workload cluster name (cluster names are unique in an API
// server: each test has its own) for namespace ns to a new bare repository and serves it over
// HTTP; opts as gittest.Serve's.
func servedRepository(t *testing.T, g Gomega, ns, name string, opts ...gittest.Option) string {
	t.Helper()
	dir := t.TempDir()
	_, err := git.PlainInit(dir, true)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = gitopsrepo.Repository{URL: dir}.PutCluster(context.Background(), "mgmt", name, workloadSpec(ns, name, 2, "w1"))
	g.Expect(err).NotTo(HaveOccurred())
	return gittest.Serve(t, dir, opts...)
}

func TestAHungGitServerHoldsUpOnlyTheSyncOfItsOwnGitOpsConfig(t *testing.T) {
	g := NewWithT(t)
	hung := gittest.Hung(t)
	hungConfig := createGitOpsConfig(t, g, env.NewNamespace(t), hung.URL) // the default timeout: a minute
	g.Eventually(hung.Accepted, timeout).Should(Receive(), "the hung config's sync is under way")

	ns := env.NewNamespace(t)
	healthy := createGitOpsConfig(t, g, ns, servedRepository(t, g, ns, "healthy"))
	expectWorkers(g, ns, "healthy", 2)
	g.Eventually(func(g Gomega) {
		ready, _ := readyOf(g, healthy)
		g.Expect(ready.Reason).To(Equal(flotillav1.SyncedReason), ready.Message)
	}, timeout, interval).Should(Succeed())
	// The hung sync is still waiting for its server, well within its timeout.
	current := &flotillav1.GitOpsConfig{}
	g.Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKeyFromObject(hungConfig), current)).To(Succeed())
	g.Expect(current.Status.LastAppliedCommit).To(BeEmpty())
}

func TestAGitServerThatDoesNotAnswerFailsTheSyncAtItsTimeout(t *testing.T) {
	g := NewWithT(t)
	hung := gittest.Hung(t)
	config := createGitOpsConfig(t, g, env.NewNamespace(t), hung.URL, func(c *flotillav1.GitOpsConfig) {
		c.Spec.Timeout = metav1.Duration{Duration: time.Second}
	})
	g.Eventually(func(g Gomega) {
		ready, _ := readyOf(g, config)
		g.Expect(ready.Reason).To(Equal(flotillav1.SyncFailedReason))
		g.Expect(ready.Message).To(ContainSubstring("fetching: the Git server did not answer in time: no answer within 1s"))
	}, timeout, interval).Should(Succeed())
}

func TestCredentialsGoOverHTTPOnlyToThisMachine(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "fleet-http", Namespace: flotillav1.GitOpsCredentialsNamespace},
		Data:       map[string][]byte{flotillav1.GitOpsUsernameKey: []byte("bot"), flotillav1.GitOpsPasswordKey: []byte("token")},
	}
	g.Expect(env.Client.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, secret) })
	withSecret := func(c *flotillav1.GitOpsConfig) { c.Spec.SecretRef = &flotillav1.SecretReference{Name: secret.Name} }

	t.Run("to a loopback host they authenticate the sync", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		config := createGitOpsConfig(t, g, ns, servedRepository(t, g, ns, "authenticated", gittest.BasicAuth("bot", "token")), withSecret)
		expectWorkers(g, ns, "authenticated", 2)
		g.Eventually(func(g Gomega) {
			ready, _ := readyOf(g, config)
			g.Expect(ready.Reason).To(Equal(flotillav1.SyncedReason), ready.Message)
		}, timeout, interval).Should(Succeed())
	})

	t.Run("to any other host the sync fails naming the field, and the server is never contacted", func(t *testing.T) {
		g := NewWithT(t)
		// 0.0.0.0 is not a loopback address, yet a connection to it reaches this machine's
		// listeners: had the sync sent anything, the server would have seen it.
		hung := gittest.Hung(t)
		url := strings.Replace(hung.URL, "127.0.0.1", "0.0.0.0", 1)
		config := createGitOpsConfig(t, g, env.NewNamespace(t), url, withSecret)
		g.Eventually(func(g Gomega) {
			ready, _ := readyOf(g, config)
			g.Expect(ready.Reason).To(Equal(flotillav1.SyncFailedReason))
			g.Expect(ready.Message).To(HavePrefix("spec.repository: credentials are never sent over plain http://: the repository " + url +
				" is plain http:// to 0.0.0.0; use its https:// URL (plain http:// is allowed only to a loopback host), or remove spec.secretRef"))
		}, timeout, interval).Should(Succeed())
		g.Consistently(hung.Accepted, 2*time.Second).ShouldNot(Receive())
	})
}
