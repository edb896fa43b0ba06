package packages

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/bundle"
)

// A bundle that pins images verifies as a PackageBundle: its images travel in the spec, and
// another digest there does not verify.
func TestABundleWithImagesVerifiesAsAPackageBundle(t *testing.T) {
	g := NewWithT(t)
	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	b := bundle.Bundle{Name: "v1-36-1", KubernetesMinor: "1.36", Build: 1,
		Packages: []bundle.Package{{Name: "hello-flotilla", Source: bundle.Source{Registry: "127.0.0.1:5001", Repository: "flotilla/hello-flotilla"},
			Versions: []bundle.Version{{Version: "0.1.0", Digest: "sha256:" + strings.Repeat("1", 64)}}}},
		Images: []bundle.Image{{Name: "registry.k8s.io/pause:3.10", Digest: "sha256:" + strings.Repeat("2", 64)}},
	}
	s, err := bundle.Sign(b, key)
	g.Expect(err).NotTo(HaveOccurred())
	pb := &packagesv1.PackageBundle{ObjectMeta: metav1.ObjectMeta{Name: b.Name}, Spec: bundleSpec(b)}
	pb.Spec.Signature = s.Signature
	g.Expect(pb.Spec.Images).To(Equal([]packagesv1.BundleImage{{Name: "registry.k8s.io/pause:3.10", Digest: b.Images[0].Digest}}))
	g.Expect(BundleVerifier{}.Verify(pb, &key.PublicKey)).To(Succeed())
	pb.Spec.Images[0].Digest = "sha256:" + strings.Repeat("3", 64)
	g.Expect(BundleVerifier{}.Verify(pb, &key.PublicKey)).To(MatchError(bundle.ErrBadSignature))
}
