package helm

import (
	"bytes"
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"

	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// A release another tool installed with Helm (as Cluster API Addon Provider for Helm does), of
// the same chart version with the same values, is taken as it is: no new revision. Different
// values upgrade it, and from then on it is Flotilla's.
func TestAReleaseAnotherToolInstalledIsAdoptedWithoutANewRevision(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	c := helloChart("0.4.0")
	c.push(t, "adopt")
	values := map[string]any{"greeting": "from-caaph"}

	e := newEngine(t)
	ac, err := e.actionConfig(ctx, cluster, ns)
	g.Expect(err).NotTo(HaveOccurred())
	ch, err := loader.LoadArchive(bytes.NewReader(c.archive(t)))
	g.Expect(err).NotTo(HaveOccurred())
	in := action.NewInstall(ac)
	in.ReleaseName, in.Namespace, in.WaitStrategy = "web", ns, waitStrategy(false)
	_, err = in.RunWithContext(context.Background(), ch, values)
	g.Expect(err).NotTo(HaveOccurred())

	rel := Release{Name: "web", Namespace: ns, Values: map[string]any{"greeting": "from-caaph"},
		Chart: ChartRef{RepoURL: "oci://" + ociHost + "/adopt", Name: "hello", Version: "0.4.0"}, Registry: registryconn.Config{PlainHTTP: true}}
	res, err := e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUnchanged))
	g.Expect(res.Revision).To(Equal(1))
	g.Expect(releaseSecrets(g, ctx, ns, "web")).To(HaveLen(1))

	other := rel
	other.Chart.Version = "0.3.0"
	helloChart("0.3.0").push(t, "adopt")
	res, err = e.InstallOrUpgrade(ctx, cluster, other)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUpgraded), "another chart version is not adopted")
	g.Expect(res.Revision).To(Equal(2))

	changed := rel
	changed.Values = map[string]any{"greeting": "from-flotilla"}
	res, err = e.InstallOrUpgrade(ctx, cluster, changed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUpgraded))
	g.Expect(res.Revision).To(Equal(3))
	g.Expect(configMapData(g, ctx, ns, "web-config")).To(HaveKeyWithValue("greeting", "from-flotilla"))
}
