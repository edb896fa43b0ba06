package kubeversion_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    kubeversion.Version
		wantErr bool
	}{
		{name: "a minor version has no patch", in: "1.36", want: kubeversion.Version{Major: 1, Minor: 36}},
		{name: "a v-prefixed minor version reads the same", in: "v1.35", want: kubeversion.Version{Major: 1, Minor: 35}},
		{name: "a full version has its patch", in: "v1.36.3", want: kubeversion.Version{Major: 1, Minor: 36, Patch: 3, HasPatch: true}},
		{name: "a pre-release suffix is dropped", in: "v1.36.3-dirty", want: kubeversion.Version{Major: 1, Minor: 36, Patch: 3, HasPatch: true}},
		{name: "a build suffix is dropped", in: "1.36.3+k3s1", want: kubeversion.Version{Major: 1, Minor: 36, Patch: 3, HasPatch: true}},
		{name: "surrounding space is ignored", in: " 1.36 ", want: kubeversion.Version{Major: 1, Minor: 36}},
		{name: "patch zero is a patch", in: "1.36.0", want: kubeversion.Version{Major: 1, Minor: 36, HasPatch: true}},
		{name: "an empty version is an error", in: "", wantErr: true},
		{name: "a major alone is an error", in: "1", wantErr: true},
		{name: "a word is an error", in: "latest", wantErr: true},
		{name: "a leading zero is an error", in: "1.036", wantErr: true},
		{name: "a fourth number is an error", in: "1.36.3.4", wantErr: true},
		{name: "a suffix without a patch is an error", in: "1.36-rc", wantErr: true},
		{name: "a double v is an error", in: "vv1.36", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := kubeversion.Parse(tt.in)
			if tt.wantErr {
				g.Expect(err).To(MatchError(ContainSubstring("is not a Kubernetes version such as 1.36 or v1.36.3")))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestForms(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		wantMinor string
		wantFull  string
	}{
		{name: "a full version", in: "v1.36.3-dirty", wantMinor: "1.36", wantFull: "v1.36.3"},
		{name: "a minor version", in: "1.35", wantMinor: "1.35", wantFull: "v1.35"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			minor, err := kubeversion.Minor(tt.in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(minor).To(Equal(tt.wantMinor))
			v, err := kubeversion.Parse(tt.in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v.String()).To(Equal(tt.wantFull))
		})
	}
	_, err := kubeversion.Minor("1")
	NewWithT(t).Expect(err).To(HaveOccurred())
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name        string
		a, b        string
		wantEqual   bool
		wantAtLeast bool
	}{
		{name: "the same version written two ways is equal", a: "v1.36.3-dirty", b: "1.36.3", wantEqual: true, wantAtLeast: true},
		{name: "a minor version equals itself with a v", a: "1.36", b: "v1.36", wantEqual: true, wantAtLeast: true},
		{name: "a minor version is not the .0 patch", a: "1.36", b: "v1.36.0", wantEqual: false, wantAtLeast: true},
		{name: "a newer patch is at least an older one", a: "v1.36.3", b: "v1.36.2", wantAtLeast: true},
		{name: "an older patch is not at least a newer one", a: "v1.36.2", b: "v1.36.3"},
		{name: "a newer minor is at least an older full version", a: "v1.36.0", b: "v1.35.4", wantAtLeast: true},
		{name: "minors compare as numbers, not text", a: "1.9", b: "1.10"},
		{name: "empty versions are unknown and equal nothing", a: "", b: ""},
		{name: "an empty version is not at least a real one", a: "", b: "v1.36.3"},
		{name: "an unparsable version equals nothing", a: "latest", b: "latest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(kubeversion.Equal(tt.a, tt.b)).To(Equal(tt.wantEqual))
			g.Expect(kubeversion.AtLeast(tt.a, tt.b)).To(Equal(tt.wantAtLeast))
		})
	}
}

func TestSameMinor(t *testing.T) {
	g := NewWithT(t)
	a, _ := kubeversion.Parse("v1.36.3")
	b, _ := kubeversion.Parse("1.36")
	c, _ := kubeversion.Parse("2.36")
	g.Expect(a.SameMinor(b)).To(BeTrue())
	g.Expect(a.SameMinor(c)).To(BeFalse())
}
