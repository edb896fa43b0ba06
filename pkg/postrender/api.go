package postrender

import addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"

// FromAPI is the Spec of a HelmChartProxy's, HelmReleaseProxy's or Package's spec.postRender;
// empty when p is nil.
func FromAPI(p *addonsv1.PostRender) Spec {
	if p == nil {
		return Spec{}
	}
	var s Spec
	for _, patch := range p.Patches {
		sp := Patch{Patch: patch.Patch}
		if t := patch.Target; t != nil {
			sp.Target = &Target{Group: t.Group, Version: t.Version, Kind: t.Kind, Name: t.Name, Namespace: t.Namespace,
				LabelSelector: t.LabelSelector, AnnotationSelector: t.AnnotationSelector}
		}
		s.Patches = append(s.Patches, sp)
	}
	for _, img := range p.Images {
		s.Images = append(s.Images, Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
	}
	if len(p.Labels) > 0 {
		s.Labels = p.Labels
	}
	return s
}
