package packagebundle

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

func TestKeep(t *testing.T) {
	src := &packagesv1.BundleSource{Registry: "r", Repository: "bundles"}
	other := &packagesv1.BundleSource{Registry: "r", Repository: "other"}
	bundleOf := func(name, minor string, build int, source *packagesv1.BundleSource) packagesv1.PackageBundle {
		return packagesv1.PackageBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: packagesv1.PackageBundleSpec{KubernetesMinor: minor, Build: build, Source: source}}
	}
	bundles := []packagesv1.PackageBundle{
		bundleOf("v1-36-1", "1.36", 1, src), bundleOf("v1-36-2", "1.36", 2, src), bundleOf("v1-36-3", "1.36", 3, src),
		bundleOf("v1-36-4", "1.36", 4, src), bundleOf("v1-35-1", "1.35", 1, src), bundleOf("v1-36-9", "1.36", 9, other),
	}
	pbcUsing := func(name string) []packagesv1.PackageBundleController {
		return []packagesv1.PackageBundleController{{Spec: packagesv1.PackageBundleControllerSpec{ActiveBundle: name}}}
	}
	tests := []struct {
		name   string
		bundle string
		pbcs   []packagesv1.PackageBundleController
		want   bool
	}{
		{name: "one of the newest builds of its source and minor is kept", bundle: "v1-36-2", want: true},
		{name: "an older one nobody uses is deleted", bundle: "v1-36-1", want: false},
		{name: "an older one a PackageBundleController uses is kept", bundle: "v1-36-1", pbcs: pbcUsing("v1-36-1"), want: true},
		{name: "another minor's bundles do not push a bundle out", bundle: "v1-35-1", want: true},
		{name: "another source's newer builds do not push a bundle out", bundle: "v1-36-2", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b *packagesv1.PackageBundle
			for i := range bundles {
				if bundles[i].Name == tt.bundle {
					b = &bundles[i]
				}
			}
			NewWithT(t).Expect(Keep(b, bundles, tt.pbcs, 3)).To(Equal(tt.want))
		})
	}
}
