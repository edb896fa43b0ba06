package addons_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
)

// TestAPostRenderPatchTemplatedPerClusterIsWhatDriftCorrectionAndTheDryRunSee installs a chart
// with a JSON 6902 patch templated per cluster and a label into two workload clusters: each holds
// its own patched ConfigMap; a hand edit is restored to the patched value, not the chart's; a
// dry run of a changed patch diffs patched against patched.
func TestAPostRenderPatchTemplatedPerClusterIsWhatDriftCorrectionAndTheDryRunSee(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	ws := useWorkloadClusters(t, ns, "w1", "w2")
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	createCluster(g, ns, "w2", map[string]string{"env": "prod"})

	releaseNS := "patched-" + ns
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Version, p.Spec.Namespace = repoURL, "hello", "1.0.0", releaseNS
	p.Spec.ValuesTemplate = ""
	p.Spec.DriftCorrection = &addonsv1.DriftCorrection{Mode: addonsv1.DriftCorrectionEnabled, Interval: &metav1.Duration{Duration: time.Second}}
	p.Spec.PostRender = &addonsv1.PostRender{
		Patches: []addonsv1.KustomizePatch{{
			Patch:  `[{"op": "replace", "path": "/data/greeting", "value": "hello from {{ .Cluster.metadata.name }}"}]`,
			Target: &addonsv1.PatchTarget{Kind: "ConfigMap"},
		}},
		Labels: map[string]string{"team": "a"},
	}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	cmKey := ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web-config"}
	for i, name := range []string{"w1", "w2"} {
		eventuallyReady(g, ns, "web", name)
		cm := &corev1.ConfigMap{}
		g.Expect(ws[i].Client.Get(ctx, cmKey, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello from "+name), "the patch is rendered per cluster")
		g.Expect(cm.Labels).To(HaveKeyWithValue("team", "a"))
	}

	// Drift correction restores the patched value.
	cm := &corev1.ConfigMap{}
	g.Expect(ws[0].Client.Get(ctx, cmKey, cm)).To(Succeed())
	cm.Data["greeting"] = "changed by hand"
	g.Expect(ws[0].Client.Update(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(ws[0].Client.Get(ctx, cmKey, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello from w1"))
	}, timeout, interval).Should(Succeed())

	// A dry run of a changed patch shows only the patch's change.
	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) {
		p.Spec.DryRun = true
		p.Spec.PostRender.Patches[0].Patch = `[{"op": "replace", "path": "/data/greeting", "value": "moin from {{ .Cluster.metadata.name }}"}]`
	})
	g.Eventually(func(g Gomega) {
		hrp := getHRP(g, ns, "web", "w1")
		g.Expect(condition(hrp.Status.Conditions, addonsv1.ReadyCondition).Reason).To(Equal(addonsv1.DryRunReason))
		g.Expect(hrp.Status.DryRunDiff).To(ContainSubstring(`-  greeting: hello from w1`))
		g.Expect(hrp.Status.DryRunDiff).To(ContainSubstring(`+  greeting: moin from w1`))
		g.Expect(hrp.Status.DryRunDiff).NotTo(ContainSubstring("team"), "the label is in both")
	}, timeout, interval).Should(Succeed())

	// Applied, the changed patch upgrades.
	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) { p.Spec.DryRun = false })
	g.Eventually(func(g Gomega) {
		hrp := eventuallyReady(g, ns, "web", "w2")
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(2))
		g.Expect(ws[1].Client.Get(ctx, cmKey, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "moin from w2"))
	}, timeout, interval).Should(Succeed())
}
