package postrender

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

const rendered = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: hello
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.example/hello:1
`

func TestASpecPatchesOverridesImagesAndLabelsTheRenderedManifests(t *testing.T) {
	g := NewWithT(t)
	s := Spec{&addonsv1.PostRender{
		Patches: []addonsv1.KustomizePatch{
			{Patch: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n"},
			{Patch: `[{"op": "replace", "path": "/data/greeting", "value": "moin"}]`, Target: &addonsv1.PatchTarget{Kind: "ConfigMap", Name: "web-config"}},
		},
		Images: []addonsv1.ImageOverride{{Name: "registry.example/hello", NewName: "mirror.example/hello", NewTag: "2"}},
		Labels: map[string]string{"team": "a"},
	}}
	out, err := s.Run(bytes.NewBufferString(rendered))
	g.Expect(err).NotTo(HaveOccurred())
	got := out.String()
	g.Expect(got).To(ContainSubstring("replicas: 3"), "strategic merge")
	g.Expect(got).To(ContainSubstring("greeting: moin"), "JSON 6902")
	g.Expect(got).To(ContainSubstring("image: mirror.example/hello:2"))
	g.Expect(got).To(ContainSubstring("team: a"))
	g.Expect(got).To(ContainSubstring("matchLabels:\n      app: web\n"), "labels stay out of selectors")
}

func TestAnEmptySpecChangesNothingAndHasNoDigest(t *testing.T) {
	g := NewWithT(t)
	in := bytes.NewBufferString(rendered)
	out, err := Spec{}.Run(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.String()).To(Equal(rendered))
	g.Expect(Spec{}.Digest()).To(BeEmpty())
	g.Expect(Spec{&addonsv1.PostRender{}}.Empty()).To(BeTrue())
	a := Spec{&addonsv1.PostRender{Labels: map[string]string{"team": "a"}}}
	g.Expect(a.Digest()).To(HavePrefix("sha256:"))
	g.Expect(a.Digest()).NotTo(Equal(Spec{&addonsv1.PostRender{Labels: map[string]string{"team": "b"}}}.Digest()))
}

func TestABadPatchIsAnErrorNamingKustomize(t *testing.T) {
	g := NewWithT(t)
	_, err := Spec{&addonsv1.PostRender{Patches: []addonsv1.KustomizePatch{{Patch: `[{"op": "replace", "path": "/data/missing/deep", "value": 1}]`, Target: &addonsv1.PatchTarget{Kind: "ConfigMap"}}}}}.Run(bytes.NewBufferString(rendered))
	g.Expect(err).To(MatchError(ContainSubstring("post-render: kustomize")))
}
