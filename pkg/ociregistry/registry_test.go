package ociregistry_test

import (
	"context"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
)

// serve serves a registry over dir on a loopback port and returns its host:port and a stop
// function.
func serve(t *testing.T, dir string) (string, func()) {
	t.Helper()
	h, err := ociregistry.NewHandler(ociregistry.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	return strings.TrimPrefix(srv.URL, "http://"), srv.Close
}

func TestManifestsAndBlobsSurviveARestart(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	host, stop := serve(t, dir)

	img, err := random.Image(1024, 2)
	g.Expect(err).NotTo(HaveOccurred())
	tagged, err := name.ParseReference(host + "/flotilla/demo:v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(tagged, img)).To(Succeed())
	digest, err := img.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	// An index over the image, which the registry accepts only when the image is known: the
	// replay must keep that order.
	idx := mutate.AppendManifests(mutate.IndexMediaType(emptyIndex(), "application/vnd.oci.image.index.v1+json"),
		mutate.IndexAddendum{Add: img})
	g.Expect(remote.WriteIndex(mustRef(g, host+"/flotilla/demo:index"), idx)).To(Succeed())
	// A deleted tag stays deleted.
	g.Expect(remote.Write(mustRef(g, host+"/flotilla/demo:gone"), img)).To(Succeed())
	g.Expect(remote.Delete(mustRef(g, host+"/flotilla/demo:gone"))).To(Succeed())
	stop()

	host, stop = serve(t, dir)
	defer stop()
	byDigest, err := remote.Image(mustRef(g, host+"/flotilla/demo@"+digest.String()))
	g.Expect(err).NotTo(HaveOccurred())
	layers, err := byDigest.Layers()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(layers).To(HaveLen(2))
	for _, l := range layers {
		rc, err := l.Compressed()
		g.Expect(err).NotTo(HaveOccurred())
		_, err = io.ReadAll(rc)
		g.Expect(err).NotTo(HaveOccurred(), "a blob's content matches its digest")
	}
	byTag, err := remote.Image(mustRef(g, host+"/flotilla/demo:v1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byTag.Digest()).To(Equal(digest))
	tags, err := remote.List(mustRef(g, host+"/flotilla/demo:v1").Context())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(ConsistOf("v1", "index"))
	_, err = remote.Index(mustRef(g, host+"/flotilla/demo:index"))
	g.Expect(err).NotTo(HaveOccurred())
}

func TestServeStopsWithItsContextAndLocksItsDirectory(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ociregistry.Serve(ctx, ociregistry.Options{Listen: addr, Dir: dir, HTPasswdFile: htpasswd(t), AnonymousPull: true})
	}()
	g.Eventually(func() error {
		_, err := remote.List(mustRef(g, addr+"/nothing:x").Context())
		if err != nil && strings.Contains(err.Error(), "connection refused") {
			return err
		}
		return nil
	}, 5*time.Second, 50*time.Millisecond).Should(Succeed())

	err = ociregistry.Serve(context.Background(), ociregistry.Options{Listen: "127.0.0.1:0", Dir: dir, HTPasswdFile: htpasswd(t)})
	g.Expect(err).To(MatchError(ContainSubstring("another registry already serves")))

	cancel()
	g.Eventually(done, 10*time.Second).Should(Receive(BeNil()))
}

func mustRef(g Gomega, s string) name.Reference {
	ref, err := name.ParseReference(s)
	g.Expect(err).NotTo(HaveOccurred())
	return ref
}

func emptyIndex() v1.ImageIndex { return empty.Index }

func TestReferrersAreFoundAfterARestart(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	host, stop := serve(t, dir)
	img, err := random.Image(64, 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(mustRef(g, host+"/flotilla/demo:v1"), img)).To(Succeed())
	subject, err := img.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	sig, err := random.Image(64, 1)
	g.Expect(err).NotTo(HaveOccurred())
	size, err := img.Size()
	g.Expect(err).NotTo(HaveOccurred())
	sig = mutate.Subject(sig, v1.Descriptor{MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: subject, Size: size}).(v1.Image)
	sigDigest, err := sig.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(mustRef(g, host+"/flotilla/demo@"+sigDigest.String()), sig)).To(Succeed())
	stop()

	host, stop = serve(t, dir)
	defer stop()
	idx, err := remote.Referrers(mustRef(g, host+"/flotilla/demo@"+subject.String()).Context().Digest(subject.String()))
	g.Expect(err).NotTo(HaveOccurred())
	m, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(m.Manifests).To(HaveLen(1))
	g.Expect(m.Manifests[0].Digest).To(Equal(sigDigest))
}

func TestAManifestIsServedOnlyWhenItIsRecorded(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	host, stop := serve(t, dir)
	img, err := random.Image(64, 1)
	g.Expect(err).NotTo(HaveOccurred())

	// go-containerregistry refuses an index whose manifests it does not have: not recorded.
	idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img})
	raw, err := idx.RawManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Put(mustRef(g, host+"/flotilla/demo:index"), rawIndex(raw))).To(HaveOccurred())

	refs, err := os.ReadFile(filepath.Join(dir, "refs.json"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(refs)).NotTo(ContainSubstring("index"), "the refused index's record is rolled back")

	// refs.json cannot be written: the push fails and nothing is served.
	g.Expect(os.Remove(filepath.Join(dir, "refs.json"))).To(Succeed())
	g.Expect(os.Mkdir(filepath.Join(dir, "refs.json"), 0o700)).To(Succeed())
	g.Expect(remote.Write(mustRef(g, host+"/flotilla/demo:v1"), img, remote.WithRetryBackoff(remote.Backoff{Steps: 1}))).To(MatchError(ContainSubstring("recording the manifest on disk")))
	g.Expect(os.Remove(filepath.Join(dir, "refs.json"))).To(Succeed())
	_, err = remote.Get(mustRef(g, host+"/flotilla/demo:v1"))
	g.Expect(err).To(HaveOccurred())

	g.Expect(remote.Write(mustRef(g, host+"/flotilla/demo:v2"), img)).To(Succeed())
	stop()
	host, stop = serve(t, dir)
	defer stop()
	tags, err := remote.List(mustRef(g, host+"/flotilla/demo:v2").Context())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tags).To(Equal([]string{"v2"}))
}

type rawIndex []byte

func (r rawIndex) RawManifest() ([]byte, error) { return r, nil }
func (r rawIndex) MediaType() (types.MediaType, error) {
	return types.OCIImageIndex, nil
}
