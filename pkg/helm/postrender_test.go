package helm

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/postrender"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// TestAPostRenderPatchesWhatIsInstalledRecordedAndDiffed installs a release with kustomize
// patches, an image override and a label: the cluster holds the patched objects, the release
// records the patched manifest (what drift correction compares with), Diff shows a changed
// patch, and the changed patch upgrades the release although the values did not change.
func TestAPostRenderPatchesWhatIsInstalledRecordedAndDiffed(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	helloChart("0.1.0").push(t, "postrender")
	e := newEngine(t)
	patches := func(greeting string) postrender.Spec {
		return postrender.Spec{PostRender: &addonsv1.PostRender{
			Patches: []addonsv1.KustomizePatch{
				{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 2\n"},
				{Patch: `[{"op": "replace", "path": "/data/greeting", "value": "` + greeting + `"}]`, Target: &addonsv1.PatchTarget{Kind: "ConfigMap"}},
			},
			Images: []addonsv1.ImageOverride{{Name: "registry.example/hello", NewName: "mirror.example/hello", NewTag: "2"}},
			Labels: map[string]string{"team": "a"},
		}}
	}
	rel := Release{
		Name: "web", Namespace: ns,
		Chart:      ChartRef{RepoURL: "oci://" + ociHost + "/postrender", Name: "hello", Version: "0.1.0"},
		Registry:   registryconn.Config{PlainHTTP: true},
		PostRender: patches("moin"),
	}
	res, err := e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionInstalled))
	g.Expect(configMapData(g, ctx, ns, "web-config")).To(HaveKeyWithValue("greeting", "moin"), "JSON 6902")
	d := &appsv1.Deployment{}
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
	g.Expect(*d.Spec.Replicas).To(Equal(int32(2)), "strategic merge")
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("mirror.example/hello:2"))
	g.Expect(d.Labels).To(HaveKeyWithValue("team", "a"))
	hash, err := InputsHash(rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ValuesHash).To(Equal(hash), "the recorded hash covers the post-render")
	installed, err := e.Get(ctx, cluster, "web", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(installed.Manifest).To(ContainSubstring("greeting: moin"), "the release records the patched manifest")

	res, err = e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUnchanged))

	rel.PostRender = patches("servus")
	diff, err := e.Diff(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(diff).To(ContainSubstring("-  greeting: moin"))
	g.Expect(diff).To(ContainSubstring("+  greeting: servus"))
	g.Expect(diff).NotTo(ContainSubstring("replicas"), "only the change is shown: the rest is patched alike")
	res, err = e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUpgraded), "a changed patch upgrades")
	g.Expect(configMapData(g, ctx, ns, "web-config")).To(HaveKeyWithValue("greeting", "servus"))

	rel.PostRender.Patches[1].Patch = `[{"op": "replace", "path": "/data/nothing/here", "value": 1}]`
	_, err = e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).To(MatchError(ContainSubstring("post-render: kustomize")))
}
