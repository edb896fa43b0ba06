package postrender

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// Spec is a post-render: the spec.postRender of a HelmChartProxy (its patches rendered for a
// cluster), HelmReleaseProxy or Package. A nil Spec changes nothing.
type Spec struct {
	*addonsv1.PostRender
}

// Empty reports whether s changes nothing.
func (s Spec) Empty() bool {
	p := s.PostRender
	return p == nil || len(p.Patches) == 0 && len(p.Images) == 0 && len(p.Labels) == 0
}

// Digest is a digest of s ("" when s is empty): equal specs have equal digests.
func (s Spec) Digest() string {
	if s.Empty() {
		return ""
	}
	b, err := json.Marshal(s.PostRender)
	if err != nil {
		return "" // unreachable: strings and maps of strings
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// kustomization file names in the in-memory file system.
const (
	dir       = "/postrender"
	manifests = "manifests.yaml"
)

// Run applies s to rendered, a stream of YAML documents, and returns the result. It is Helm's
// postrenderer.PostRenderer.
func (s Spec) Run(rendered *bytes.Buffer) (*bytes.Buffer, error) {
	if s.Empty() || len(bytes.TrimSpace(rendered.Bytes())) == 0 {
		return rendered, nil
	}
	kyaml, err := yaml.Marshal(kustomization(s.PostRender))
	if err != nil {
		return nil, fmt.Errorf("post-render: writing the kustomization: %w", err)
	}
	fs := filesys.MakeFsInMemory()
	if err := fs.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("post-render: %w", err)
	}
	if err := fs.WriteFile(dir+"/"+konfig.DefaultKustomizationFileName(), kyaml); err != nil {
		return nil, fmt.Errorf("post-render: %w", err)
	}
	if err := fs.WriteFile(dir+"/"+manifests, rendered.Bytes()); err != nil {
		return nil, fmt.Errorf("post-render: %w", err)
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
	if err != nil {
		return nil, fmt.Errorf("post-render: kustomize: %w", err)
	}
	out, err := res.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("post-render: writing the result: %w", err)
	}
	return bytes.NewBuffer(out), nil
}

// kustomization is the kustomization of p over the rendered manifests.
func kustomization(p *addonsv1.PostRender) types.Kustomization {
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: []string{manifests},
	}
	for _, patch := range p.Patches {
		kp := types.Patch{Patch: patch.Patch}
		if t := patch.Target; t != nil {
			kp.Target = &types.Selector{
				ResId:              resid.NewResIdWithNamespace(resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind}, t.Name, t.Namespace),
				LabelSelector:      t.LabelSelector,
				AnnotationSelector: t.AnnotationSelector,
			}
		}
		k.Patches = append(k.Patches, kp)
	}
	for _, img := range p.Images {
		k.Images = append(k.Images, types.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
	}
	if len(p.Labels) > 0 {
		k.Labels = []types.Label{{Pairs: p.Labels}}
	}
	return k
}
