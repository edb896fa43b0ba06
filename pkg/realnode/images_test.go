package realnode_test

import (
	"context"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
)

// Real nodes pull Flotilla's own images by the digests `flotilla image build` recorded: an image
// pushed under the same tag afterwards (by whoever could push) is not what they pull.
func TestNodeImagesArePinnedByTheDigestsOfTheImagesBuilt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	mirror := strings.TrimPrefix(srv.URL, "http://")

	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	g.Expect(os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o600)).To(Succeed())
	program := func(content string) string {
		path := filepath.Join(dir, content)
		g.Expect(os.WriteFile(path, []byte(content), 0o600)).To(Succeed())
		return path
	}
	home := t.TempDir()
	built := ociimage.Record{}
	for _, img := range []ociimage.Image{ociimage.Pause, ociimage.CoreDNS} {
		image, err := ociimage.Build(img, program("the real "+img.Program), ca)
		g.Expect(err).NotTo(HaveOccurred())
		ref, err := ociimage.MirrorReference(mirror, img.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ociimage.Push(ctx, ref, image)).To(Succeed())
		digest, err := image.Digest()
		g.Expect(err).NotTo(HaveOccurred())
		built[img.Name] = digest.String()
	}
	g.Expect(ociimage.RecordDigests(ociimage.RecordPath(home), built)).To(Succeed())

	record, err := ociimage.ReadRecord(ociimage.RecordPath(home))
	g.Expect(err).NotTo(HaveOccurred())
	images, err := realnode.PinnedImages(record)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(images.Sandbox).To(Equal(realnode.SandboxImage + "@" + built[realnode.SandboxImage]))
	g.Expect(images.DNS).To(Equal(realnode.DNSImage + "@" + built[realnode.DNSImage]))
	var deployment *appsv1.Deployment
	for _, obj := range realnode.ClusterObjects(netip.MustParseAddr("10.96.0.10"), images) {
		if d, ok := obj.(*appsv1.Deployment); ok {
			deployment = d
		}
	}
	g.Expect(deployment).NotTo(BeNil())
	g.Expect(deployment.Spec.Template.Spec.Containers[0].Image).To(Equal(images.DNS), "CoreDNS runs by digest")

	// Another image under the tags.
	for _, img := range []ociimage.Image{ociimage.Pause, ociimage.CoreDNS} {
		image, err := ociimage.Build(img, program("a replacement of "+img.Program), ca)
		g.Expect(err).NotTo(HaveOccurred())
		ref, err := ociimage.MirrorReference(mirror, img.Name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ociimage.Push(ctx, ref, image)).To(Succeed())
	}
	for _, pinned := range []string{images.Sandbox, images.DNS} {
		// What containerd asks the mirror for: the digest, at the mirror path.
		ref, err := ociimage.MirrorReference(mirror, pinned)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ref).To(ContainSubstring("@sha256:"))
		desc, err := remote.Get(mustParse(g, ref))
		g.Expect(err).NotTo(HaveOccurred())
		_, digest, _ := strings.Cut(pinned, "@")
		g.Expect(desc.Digest.String()).To(Equal(digest), "the pinned image is the one built")
		tagged, err := ociimage.MirrorReference(mirror, strings.Split(pinned, "@")[0])
		g.Expect(err).NotTo(HaveOccurred())
		now, err := remote.Head(mustParse(g, tagged))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(now.Digest.String()).NotTo(Equal(digest), "the tag names the replacement, which nodes do not pull")
	}
}

func TestNodeImagesMustBeRecorded(t *testing.T) {
	g := NewWithT(t)
	_, err := realnode.PinnedImages(ociimage.Record{realnode.SandboxImage: "sha256:" + strings.Repeat("a", 64)})
	g.Expect(err).To(MatchError(ContainSubstring("the digest of " + realnode.DNSImage + " is not recorded: run 'flotilla image build'")))
	_, err = realnode.PinnedImages(ociimage.Record{realnode.SandboxImage: "latest", realnode.DNSImage: "sha256:" + strings.Repeat("a", 64)})
	g.Expect(err).To(MatchError(ContainSubstring("the recorded digest of " + realnode.SandboxImage)))
}

func mustParse(g Gomega, ref string) name.Reference {
	r, err := name.ParseReference(ref)
	g.Expect(err).NotTo(HaveOccurred())
	return r
}
