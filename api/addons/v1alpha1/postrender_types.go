package v1alpha1

// PostRender changes the manifests Helm rendered before they are installed, with kustomize:
// patches, then image overrides, then labels. The release records the changed manifests, so
// drift correction and dry-run diffs compare with what was applied.
type PostRender struct {
	// patches are kustomize patches: strategic merge patches (an object's YAML, naming the
	// object it patches unless a target selects others) and JSON 6902 patches (a list of
	// operations, with a target). On a HelmChartProxy each patch is a Go template rendered for
	// each cluster as valuesTemplate is.
	// +optional
	Patches []KustomizePatch `json:"patches,omitempty"`

	// images override the name, tag or digest of container images.
	// +optional
	Images []ImageOverride `json:"images,omitempty"`

	// labels are added to every object of the release (not to selectors).
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// KustomizePatch is one kustomize patch.
type KustomizePatch struct {
	// patch is a strategic merge patch or a JSON 6902 patch, as YAML or JSON.
	// +kubebuilder:validation:MinLength=1
	Patch string `json:"patch"`

	// target selects the objects to patch; a JSON 6902 patch needs one.
	// +optional
	Target *PatchTarget `json:"target,omitempty"`
}

// PatchTarget selects objects of the rendered manifests; every field set must match.
type PatchTarget struct {
	// group of the objects' API version ("" for the core group).
	// +optional
	Group string `json:"group,omitempty"`
	// version of the objects' API version.
	// +optional
	Version string `json:"version,omitempty"`
	// kind of the objects.
	// +optional
	Kind string `json:"kind,omitempty"`
	// name of the object (a regular expression).
	// +optional
	Name string `json:"name,omitempty"`
	// namespace of the objects as rendered (most charts render none).
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// labelSelector over the objects' labels.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// annotationSelector over the objects' annotations.
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// ImageOverride replaces an image of the release's containers.
type ImageOverride struct {
	// name of the image to override, without tag or digest (registry.example/app).
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// newName replaces the name.
	// +optional
	NewName string `json:"newName,omitempty"`
	// newTag replaces the tag.
	// +optional
	NewTag string `json:"newTag,omitempty"`
	// digest (sha256:...) replaces the tag.
	// +optional
	Digest string `json:"digest,omitempty"`
}
