package addons_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
)

// A proxy pinning its chart by digest installs that chart, and only that one: a tag moved to
// other content since does not change what its clusters run, a digest of another chart is
// refused naming spec.chartDigest, and a digest not of the form sha256:<hex> is refused by
// the API server.
func TestAProxyPinnedByDigestRunsThatChartOnly(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]
	registry, stop := charttest.StartRegistry()
	defer stop()
	pinned := charttest.Push(t, registry+"/charts", charttest.Hello("1.0.0"))
	other := charttest.Push(t, registry+"/charts", charttest.Hello("1.1.0"))
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	// The tag 1.0.0 moves to other content: the pinned digest is still what is installed.
	moved := charttest.Hello("1.0.0")
	moved.Files["templates/configmap.yaml"] = strings.ReplaceAll(moved.Files["templates/configmap.yaml"], "greeting:", "moved: \"yes\"\n  greeting:")
	g.Expect(charttest.Push(t, registry+"/charts", moved)).NotTo(Equal(pinned))

	releaseNS := "pinned-" + ns
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.Version, p.Spec.ChartDigest, p.Spec.Namespace = "oci://"+registry+"/charts", "1.0.0", pinned, releaseNS
	p.Spec.Registry = &addonsv1.RegistryOptions{PlainHTTP: true}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	hrp := eventuallyReady(g, ns, "web", "w1")
	g.Expect(hrp.Status.ChartVersion).To(Equal("1.0.0"))
	cm := &corev1.ConfigMap{}
	g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web-config"}, cm)).To(Succeed())
	g.Expect(cm.Data).NotTo(HaveKey("moved"), "the chart installed is the pinned one, not the tag's")

	// The digest of another chart (version 1.1.0) is refused: the spec asks for 1.0.0.
	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) { p.Spec.ChartDigest = other })
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "web", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(addonsv1.InstallFailedReason))
		g.Expect(c.Message).To(HavePrefix("spec.chartDigest: chart digest mismatch: chart hello is version 1.1.0, not the requested 1.0.0"))
	}, timeout, interval).Should(Succeed())
	g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web-config"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("version", "1.0.0"), "the release is left as it was")

	bad := proxy(ns, "bad")
	bad.Spec.ChartDigest = "sha256:ABC"
	err := env.Client.Create(ctx, bad)
	g.Expect(err).To(MatchError(ContainSubstring("spec.chartDigest")))
	g.Expect(err).To(MatchError(ContainSubstring("^sha256:[a-f0-9]{64}$")))
}
