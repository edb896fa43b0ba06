package addons_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
)

// A chart whose templates would exhaust the manager's memory renders in a bounded worker: its
// release fails saying which limit stopped it and where to look, and the manager goes on
// installing another chart in the same cluster.
func TestAHostileChartFailsItsReleaseAndTheManagerGoesOn(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]
	hostile := charttest.Chart{Name: "hostile", Version: "1.0.0", Files: map[string]string{
		"Chart.yaml":               "apiVersion: v2\nname: hostile\nversion: 1.0.0\n",
		"templates/configmap.yaml": "{{ range $i := until 2000000000 }}x{{ end }}\n",
	}}
	repoURL := charttest.Repository{Charts: []charttest.Chart{hostile, charttest.Hello("1.0.0")}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	p := proxy(ns, "hostile")
	p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Namespace = repoURL, "hostile", "hostile-"+ns
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "hostile", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(addonsv1.InstallFailedReason))
		g.Expect(c.Message).To(ContainSubstring("rendering chart hostile 1.0.0: chart templates: rendering was stopped"))
	}, timeout, interval).Should(Succeed())

	p = proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.Namespace = repoURL, "web-"+ns
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "web", "w1")
	g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "web-" + ns, Name: "web-config"}, &corev1.ConfigMap{})).To(Succeed())
}
