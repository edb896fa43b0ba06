package postrender

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/yaml"
)

// Spec is a post-render: what kustomize changes in the rendered manifests, in this order:
// patches, images, labels.
type Spec struct {
	// Patches are strategic merge patches or JSON 6902 patches, each applied to the objects its
	// target selects (to the object it names itself, for a strategic merge patch without one).
	Patches []Patch `json:"patches,omitempty"`
	// Images override the name, tag or digest of container images.
	Images []Image `json:"images,omitempty"`
	// Labels are added to every object (not to selectors).
	Labels map[string]string `json:"labels,omitempty"`
}

// Patch is one kustomize patch.
type Patch struct {
	// Patch is a strategic merge patch (YAML of an object) or a JSON 6902 patch (a YAML or JSON
	// list of operations).
	Patch string `json:"patch"`
	// Target selects the objects to patch; a JSON 6902 patch needs one.
	Target *Target `json:"target,omitempty"`
}

// Target selects objects as kustomize's patch target does.
type Target struct {
	Group              string `json:"group,omitempty"`
	Version            string `json:"version,omitempty"`
	Kind               string `json:"kind,omitempty"`
	Name               string `json:"name,omitempty"`
	Namespace          string `json:"namespace,omitempty"`
	LabelSelector      string `json:"labelSelector,omitempty"`
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

func resID(t *Target) resid.ResId {
	return resid.NewResIdWithNamespace(resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind}, t.Name, t.Namespace)
}

// Image overrides an image, as kustomize's images transformer does.
type Image struct {
	// Name is the image name to override, without tag or digest.
	Name string `json:"name"`
	// NewName replaces the name.
	NewName string `json:"newName,omitempty"`
	// NewTag replaces the tag.
	NewTag string `json:"newTag,omitempty"`
	// Digest replaces the tag with a digest.
	Digest string `json:"digest,omitempty"`
}

// Empty reports whether s changes nothing.
func (s Spec) Empty() bool {
	return len(s.Patches) == 0 && len(s.Images) == 0 && len(s.Labels) == 0
}

// Digest is a digest of s ("" when s is empty): equal specs have equal digests.
func (s Spec) Digest() string {
	if s.Empty() {
		return ""
	}
	b, err := json.Marshal(s)
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
	if s.Empty() || bytes.TrimSpace(rendered.Bytes()) == nil {
		return rendered, nil
	}
	k := kustypes.Kustomization{
		TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
		Resources: []string{manifests},
	}
	for _, p := range s.Patches {
		kp := kustypes.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			kp.Target = &kustypes.Selector{
				ResId:              resID(t),
				LabelSelector:      t.LabelSelector,
				AnnotationSelector: t.AnnotationSelector,
			}
		}
		k.Patches = append(k.Patches, kp)
	}
	for _, img := range s.Images {
		k.Images = append(k.Images, kustypes.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
	}
	if len(s.Labels) > 0 {
		k.Labels = []kustypes.Label{{Pairs: s.Labels}}
	}
	kyaml, err := yaml.Marshal(k)
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
