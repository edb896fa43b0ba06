package inmemory_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/addons/desired"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
)

// An addon reaches an in-memory cluster through everything the local provider's clusters use:
// Cluster API's cluster cache, pkg/helm's engine (server-side apply, waiting for the Deployment),
// the health gate, and drift correction driven by a metadata-only watch of the workload cluster
// (the drift interval is an hour: only the watch can bring the restoration this test waits for).
func TestAnAddonIsInstalledKeptAndUninstalledInAnInMemoryCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cl := createCluster(t, g, "a1", "1.36", 1)
	waitReady(g, cl)
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)

	p := &addonsv1.HelmChartProxy{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: cl.Namespace},
		Spec: addonsv1.HelmChartProxySpec{
			ClusterSelector: metav1.LabelSelector{MatchLabels: map[string]string{flotillav1.ClusterNameLabel: cl.Name}},
			ValuesTemplate:  "greeting: hi from {{ .Cluster.metadata.name }}\nreplicas: 2\n",
			ReleaseSpec: addonsv1.ReleaseSpec{
				ChartName: "hello", RepoURL: repoURL, Version: "1.0.0", Namespace: "web",
				Options:         addonsv1.HelmOptions{Wait: true},
				DriftCorrection: &addonsv1.DriftCorrection{Mode: addonsv1.DriftCorrectionEnabled, Interval: &metav1.Duration{Duration: time.Hour}},
			},
		},
	}
	g.Expect(c.Create(ctx, p)).To(Succeed())
	hrpKey := ctrlclient.ObjectKey{Namespace: cl.Namespace, Name: desired.ReleaseProxyName("web", cl.Name)}
	g.Eventually(func(g Gomega) {
		hrp := &addonsv1.HelmReleaseProxy{}
		g.Expect(c.Get(ctx, hrpKey, hrp)).To(Succeed())
		for _, t := range []string{addonsv1.ReadyCondition, addonsv1.HealthyCondition} {
			cond := meta.FindStatusCondition(hrp.Status.Conditions, t)
			g.Expect(cond).NotTo(BeNil(), t)
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", t, cond.Reason, cond.Message)
		}
	}, readyTimeout, interval).Should(Succeed())

	wc, _ := workloadClient(g, cl)
	cm := &corev1.ConfigMap{}
	g.Expect(wc.Get(ctx, ctrlclient.ObjectKey{Namespace: "web", Name: "web-config"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hi from a1"))
	deploy := &appsv1.Deployment{}
	g.Expect(wc.Get(ctx, ctrlclient.ObjectKey{Namespace: "web", Name: "web"}, deploy)).To(Succeed())
	g.Expect(deploy.Status.AvailableReplicas).To(BeEquivalentTo(2), "the gateway makes a Deployment available")

	t.Run("a changed object is put back", func(t *testing.T) {
		g := NewWithT(t)
		patch := ctrlclient.MergeFrom(cm.DeepCopy())
		cm.Data["greeting"] = "changed by hand"
		g.Expect(wc.Patch(ctx, cm, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			restored := &corev1.ConfigMap{}
			g.Expect(wc.Get(ctx, ctrlclient.ObjectKeyFromObject(cm), restored)).To(Succeed())
			g.Expect(restored.Data).To(HaveKeyWithValue("greeting", "hi from a1"))
		}, 30*time.Second, interval).Should(Succeed())
	})

	t.Run("deleting the proxy uninstalls the release", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Delete(ctx, p)).To(Succeed())
		g.Eventually(func(g Gomega) {
			list := &corev1.ConfigMapList{}
			g.Expect(wc.List(ctx, list, ctrlclient.InNamespace("web"))).To(Succeed())
			g.Expect(list.Items).To(BeEmpty())
			secrets := &corev1.SecretList{}
			g.Expect(wc.List(ctx, secrets, ctrlclient.InNamespace("web"), ctrlclient.MatchingLabels{"owner": "helm"})).To(Succeed())
			g.Expect(secrets.Items).To(BeEmpty())
		}, readyTimeout, interval).Should(Succeed())
	})
}
