package bundle_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/packages/bundle"
)

// The images a bundle pins are part of what is signed: another digest under the same name does
// not verify, and an image without a digest of its own is refused.
func TestTheImagesOfABundleAreSignedAndChecked(t *testing.T) {
	g := NewWithT(t)
	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	b := sampleBundle()
	pause := bundle.Image{Name: "registry.k8s.io/pause:3.10", Digest: "sha256:" + strings.Repeat("a", 64)}
	b.Images = []bundle.Image{pause}
	g.Expect(b.Validate()).To(Succeed())
	s, err := bundle.Sign(b, key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Verify(s, &key.PublicKey)).To(Succeed())
	got, ok := s.Bundle.Image(pause.Name)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(Equal(pause))

	s.Bundle.Images = []bundle.Image{{Name: pause.Name, Digest: "sha256:" + strings.Repeat("b", 64)}}
	g.Expect(bundle.Verify(s, &key.PublicKey)).To(MatchError(bundle.ErrBadSignature), "another image under the name")
	g.Expect(bundle.SameContent(b, sampleBundle())).To(BeFalse(), "a bundle that pins images is new content")

	for _, bad := range [][]bundle.Image{
		{{Name: pause.Name, Digest: "latest"}},
		{{Name: "", Digest: pause.Digest}},
		{pause, pause},
	} {
		b.Images = bad
		g.Expect(b.Validate()).To(MatchError(ContainSubstring("needs a name of its own and a sha256 digest")), "%v", bad)
	}
}
