package addons_test

import (
	"context"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
)

// A forged Helm release record in the workload cluster, a gzip bomb that Helm's own storage
// driver would inflate to 700 MiB on every resync, fails the release naming the Secret and what
// to do, while the manager (this process) takes no more memory from the system than it had.
func TestAGzipBombReleaseRecordFailsItsReleaseNotTheManager(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	releaseNS := "bomb-" + ns
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.Namespace = repoURL, releaseNS
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "web", "w1")

	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	bomb := charttest.ReleaseRecordSecret(releaseNS, "web", 2, charttest.GzipBombRecord(700<<20))
	g.Expect(w.Client.Create(ctx, bomb)).To(Succeed())
	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) { p.Spec.ValuesTemplate = "greeting: changed\n" })
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "web", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(addonsv1.InstallFailedReason))
		g.Expect(c.Message).To(ContainSubstring("Secret " + releaseNS + "/" + bomb.Name + ": release record too large"))
		g.Expect(c.Message).To(ContainSubstring("kubectl -n " + releaseNS + " delete secret " + bomb.Name))
	}, timeout, interval).Should(Succeed())
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	g.Expect(int64(after.Sys)-int64(before.Sys)).To(BeNumerically("<", 64<<20), "bytes of memory taken from the system")

	g.Expect(w.Client.Delete(ctx, bomb)).To(Succeed())
	g.Eventually(func(g Gomega) {
		hrp := eventuallyReady(g, ns, "web", "w1")
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(2))
	}, timeout, interval).Should(Succeed())
}
