package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/packages/bundle/publish"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// The curated catalog published to one registry, with the images it runs there too, is exported
// with that registry only, and, once that registry is gone, imported into another below a
// prefix: there the bundle verifies with the publisher's key and every chart it names is found
// by its digest and its version, read through the mirror routing the manager uses, and every
// image (the one the hello-flotilla chart runs, a multi-platform index, and those of real nodes)
// is found at its mirror path with the same manifest and blobs, byte for byte.
func TestTheCatalogTravelsToAMirrorWithTheOriginalGone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	original, stopOriginal := charttest.StartRegistry()
	images := pushImages(t, original)
	key, published := publishCatalog(t, original, original)

	path := filepath.Join(t.TempDir(), "flotilla-packages.tar")
	start := time.Now()
	exported, err := Export(ctx, ExportOptions{Registry: original, Repository: "flotilla", KubernetesMinors: []string{"1.36"}, Connection: plain, Path: path})
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("exported %d artifacts in %s", len(exported), time.Since(start))
	g.Expect(exported).To(HaveLen(1 + len(published.Charts) + len(images)))
	g.Expect(exported[0]).To(MatchFields(IgnoreExtras, Fields{"Kind": Equal(KindBundle), "Repository": Equal("flotilla"), "Tag": Equal(published.Bundles[0].Name)}))
	g.Expect(exported).To(ContainElement(MatchFields(IgnoreExtras, Fields{"Kind": Equal(KindImage),
		"Repository": Equal("ghcr.io/flotilla-dev/hello-flotilla"), "Tag": Equal("0.1.0"), "Digest": Equal(images[ociimage.HelloFlotilla.Name].digest)})),
		"the image the hello-flotilla chart (and hello-stack's subchart) runs, once")
	stopOriginal()

	mirror, err := charttest.StartSecureRegistry()
	g.Expect(err).NotTo(HaveOccurred())
	defer mirror.Close()
	conn := registryconn.Config{Username: mirror.Username, Password: mirror.Password, CAData: mirror.CAPEM}
	start = time.Now()
	imported, err := Import(ctx, ImportOptions{Path: path, Registry: mirror.Host + "/copies", Connection: conn, PublicKey: &key.PublicKey})
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("imported %d artifacts in %s", len(imported), time.Since(start))
	g.Expect(imported).To(HaveLen(len(exported)))

	routed := registryconn.Config{PlainHTTP: true, Mirror: &registryconn.Mirror{Registry: mirror.Host + "/copies", Connection: conn}}
	host, repo, via := routed.Route(original, "flotilla")
	opts, err := bundle.RemoteOptions(via)
	g.Expect(err).NotTo(HaveOccurred())
	names, err := bundle.List(ctx, host, repo, "1.36", opts...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(Equal([]string{published.Bundles[0].Name}))
	s, err := bundle.Pull(ctx, host+"/"+repo+":"+names[0], opts...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Verify(s, &key.PublicKey)).To(Succeed(), "the signature holds in the mirror")
	g.Expect(s.Bundle.Images).To(HaveLen(len(images)), "the signed bundle pins every image")
	for _, image := range s.Bundle.Images {
		g.Expect(image.Digest).To(Equal(images[image.Name].digest), image.Name)
	}
	for _, p := range s.Bundle.Packages {
		for _, v := range p.Versions {
			host, repo, _ := routed.Route(p.Source.Registry, p.Source.Repository)
			for _, ref := range []string{host + "/" + repo + "@" + v.Digest, host + "/" + repo + ":" + v.Version} {
				r, err := name.ParseReference(ref)
				g.Expect(err).NotTo(HaveOccurred())
				desc, err := remote.Get(r, append(opts, remote.WithContext(ctx))...)
				g.Expect(err).NotTo(HaveOccurred(), ref)
				g.Expect(desc.Digest.String()).To(Equal(v.Digest), ref)
			}
		}
	}
	for upstream, want := range images {
		ref, err := ociimage.MirrorReference(mirror.Host+"/copies", upstream)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(readImage(t, ref, opts...)).To(Equal(want), "%s, as a node's containerd would resolve it through the mirror", upstream)
	}
}

// plain reaches the test registries on loopback.
var plain = registryconn.Config{PlainHTTP: true}

// publishCatalog publishes the curated catalog's 1.36 bundle to registry (plain HTTP), signed
// with a new key, with the images of imageRegistry (none when empty).
func publishCatalog(t testing.TB, registry, imageRegistry string) (*ecdsa.PrivateKey, publish.Result) {
	t.Helper()
	key, err := bundle.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	published, err := publish.Publish(context.Background(), publish.Options{Registry: registry, Repository: "flotilla", KubernetesMinors: []string{"1.36"}, Key: key, Connection: plain,
		ImageRegistry: imageRegistry})
	if err != nil {
		t.Fatal(err)
	}
	return key, published
}

// storedImage is an image as a registry serves it: its manifest (or index) digest and raw bytes,
// and the bytes of every blob it refers to, by digest, those of each platform's manifest too.
type storedImage struct {
	digest    string
	manifests map[string][]byte
	blobs     map[string][]byte
}

// pushImages pushes, to their mirror paths in registry, a random image for each image the
// curated catalog and real nodes run, the chart's as an index of two platforms, and returns them
// as the registry serves them, by upstream name.
func pushImages(t *testing.T, registry string) map[string]storedImage {
	t.Helper()
	g := NewWithT(t)
	pushed := map[string]storedImage{}
	for _, upstream := range append([]string{ociimage.HelloFlotilla.Name}, realnode.Images...) {
		ref, err := ociimage.MirrorReference(registry, upstream)
		g.Expect(err).NotTo(HaveOccurred())
		tag, err := name.NewTag(ref)
		g.Expect(err).NotTo(HaveOccurred())
		if upstream == ociimage.HelloFlotilla.Name {
			idx, err := random.Index(2048, 2, 2)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(remote.WriteIndex(tag, idx)).To(Succeed())
		} else {
			img, err := random.Image(2048, 2)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(remote.Write(tag, img)).To(Succeed())
		}
		pushed[upstream] = readImage(t, ref)
	}
	return pushed
}

// readImage reads ref from its registry: the manifest or index, each platform's manifest and
// every blob, checking that each blob hashes to its digest.
func readImage(t *testing.T, ref string, opts ...remote.Option) storedImage {
	t.Helper()
	g := NewWithT(t)
	r, err := name.ParseReference(ref)
	g.Expect(err).NotTo(HaveOccurred())
	desc, err := remote.Get(r, opts...)
	g.Expect(err).NotTo(HaveOccurred(), ref)
	s := storedImage{digest: desc.Digest.String(), manifests: map[string][]byte{desc.Digest.String(): desc.Manifest}, blobs: map[string][]byte{}}
	var manifests []*v1.Manifest
	if desc.MediaType.IsIndex() {
		idx, err := v1.ParseIndexManifest(bytes.NewReader(desc.Manifest))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(idx.Manifests).To(HaveLen(2))
		for _, m := range idx.Manifests {
			child, err := remote.Get(r.Context().Digest(m.Digest.String()), opts...)
			g.Expect(err).NotTo(HaveOccurred())
			s.manifests[m.Digest.String()] = child.Manifest
			parsed, err := v1.ParseManifest(bytes.NewReader(child.Manifest))
			g.Expect(err).NotTo(HaveOccurred())
			manifests = append(manifests, parsed)
		}
	} else {
		parsed, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
		g.Expect(err).NotTo(HaveOccurred())
		manifests = append(manifests, parsed)
	}
	for _, m := range manifests {
		for _, blob := range append([]v1.Descriptor{m.Config}, m.Layers...) {
			l, err := remote.Layer(r.Context().Digest(blob.Digest.String()), opts...)
			g.Expect(err).NotTo(HaveOccurred())
			rc, err := l.Compressed()
			g.Expect(err).NotTo(HaveOccurred())
			data, err := io.ReadAll(rc)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rc.Close()).To(Succeed())
			g.Expect(fmt.Sprintf("sha256:%x", sha256.Sum256(data))).To(Equal(blob.Digest.String()))
			s.blobs[blob.Digest.String()] = data
		}
	}
	g.Expect(s.blobs).To(HaveLen(len(manifests)*3), "a config and two layers per platform")
	return s
}

// An image a chart runs that is not in the image registry fails the publish of a bundle that
// records images, naming the image, the chart and the fixes; a bundle that records none cannot
// export images (their digests are unknown), and exports its charts alone.
func TestAMissingImageIsNamedAndABundleWithoutImagesExportsNone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	original, stop := charttest.StartRegistry()
	defer stop()
	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = publish.Publish(ctx, publish.Options{Registry: original, Repository: "flotilla", KubernetesMinors: []string{"1.36"}, Key: key, Connection: plain, ImageRegistry: original})
	g.Expect(err).To(MatchError(And(
		ContainSubstring("image ghcr.io/flotilla-dev/hello-flotilla:0.1.0, which chart flotilla/hello-flotilla 0.1.0 runs"),
		ContainSubstring(original+"/ghcr.io/flotilla-dev/hello-flotilla:0.1.0"),
		ContainSubstring("flotilla image build"))))
	_, published := publishCatalog(t, original, "")

	path := filepath.Join(t.TempDir(), "flotilla-packages.tar")
	_, err = Export(ctx, ExportOptions{Registry: original, Repository: "flotilla", KubernetesMinors: []string{"1.36"}, Connection: plain, Path: path})
	g.Expect(err).To(MatchError(And(ContainSubstring("bundle "+published.Bundles[0].Name+" records no images"), ContainSubstring("--skip-images"))))
	_, err = os.Stat(path)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "no archive is written")

	exported, err := Export(ctx, ExportOptions{Registry: original, Repository: "flotilla", KubernetesMinors: []string{"1.36"}, Connection: plain, Path: path, SkipImages: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exported).To(HaveLen(1 + len(published.Charts)))
	g.Expect(exported).NotTo(ContainElement(HaveField("Kind", KindImage)))
}

func TestImportRefusesWhatIsNotAnExport(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "evil.tar")
	f, err := os.Create(path)
	g.Expect(err).NotTo(HaveOccurred())
	tw := tar.NewWriter(f)
	g.Expect(tw.WriteHeader(&tar.Header{Name: "../../etc/evil", Mode: 0o644, Size: 1, Typeflag: tar.TypeReg})).To(Succeed())
	_, err = tw.Write([]byte("x"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tw.Close()).To(Succeed())
	g.Expect(f.Close()).To(Succeed())

	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Import(context.Background(), ImportOptions{Path: path, Registry: "127.0.0.1:1", PublicKey: &key.PublicKey})
	g.Expect(err).To(MatchError(ContainSubstring(`holds "../../etc/evil", which is not a file of an OCI image layout`)))
	_, err = os.Stat(filepath.Join(dir, "..", "..", "etc", "evil"))
	g.Expect(os.IsNotExist(err)).To(BeTrue())

	_, err = Import(context.Background(), ImportOptions{Path: path, Registry: "https://m.example", PublicKey: &key.PublicKey})
	g.Expect(err).To(MatchError(ContainSubstring("without a scheme")))
}

// An archive decides nothing: what it carries beyond what its bundles, signed for the trusted
// key, name (another image under the pause repository, a chart in a repository no bundle
// names), or bundles signed with another key, make the import push nothing at all.
func TestImportPushesOnlyWhatTheSignedBundlesName(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	original, stop := charttest.StartRegistry()
	defer stop()
	pushImages(t, original)
	key, _ := publishCatalog(t, original, original)
	path := filepath.Join(t.TempDir(), "flotilla-packages.tar")
	_, err := Export(ctx, ExportOptions{Registry: original, Repository: "flotilla", KubernetesMinors: []string{"1.36"}, Connection: plain, Path: path})
	g.Expect(err).NotTo(HaveOccurred())

	// with returns a copy of the archive with img added under kind, repository and tag.
	with := func(img v1.Image, kind, repository, tag string) string {
		dir := t.TempDir()
		g.Expect(extract(path, dir)).To(Succeed())
		l, err := layout.FromPath(dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(l.AppendImage(img, layout.WithAnnotations(map[string]string{
			KindAnnotation: kind, RepositoryAnnotation: repository, RefNameAnnotation: tag, RegistryAnnotation: "registry.k8s.io",
		}))).To(Succeed())
		tampered := filepath.Join(t.TempDir(), "tampered.tar")
		g.Expect(writeTar(dir, tampered)).To(Succeed())
		return tampered
	}
	evil, err := random.Image(512, 1)
	g.Expect(err).NotTo(HaveOccurred())
	other, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	for _, tc := range []struct {
		name    string
		path    string
		key     *ecdsa.PublicKey
		wantErr string
	}{
		{name: "another pause image under the tag nodes pull", path: with(evil, KindImage, "registry.k8s.io/pause", "3.10"), key: &key.PublicKey,
			wantErr: "the archive would push image registry.k8s.io/pause:3.10 (" + must(evil.Digest()).String() + "), which no bundle signed for the key names: refusing to write repository registry.k8s.io/pause"},
		{name: "a chart in a repository no bundle names", path: with(evil, KindChart, "flotilla/evil", "1.0.0"), key: &key.PublicKey,
			wantErr: "refusing to write repository flotilla/evil"},
		{name: "a bundle over a chart's repository", path: with(evil, KindBundle, "flotilla/hello-flotilla", "v1-36-9"), key: &key.PublicKey,
			wantErr: "bundle flotilla/hello-flotilla v1-36-9"},
		{name: "bundles signed with another key", path: path, key: &other.PublicKey, wantErr: "signature does not match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			mirror, stop := charttest.StartRegistry()
			defer stop()
			_, err := Import(ctx, ImportOptions{Path: tc.path, Registry: mirror, Connection: plain, PublicKey: tc.key})
			g.Expect(err).To(MatchError(And(ContainSubstring(tc.wantErr), ContainSubstring("nothing was pushed"))))
			reg, err := name.NewRegistry(mirror)
			g.Expect(err).NotTo(HaveOccurred())
			repos, err := remote.Catalog(ctx, reg)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(repos).To(BeEmpty(), "nothing was pushed")
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
