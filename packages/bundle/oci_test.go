package bundle_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// startRegistry serves an embedded registry on a loopback port and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	h, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func build(t *testing.T, minor string, n int) bundle.Bundle {
	t.Helper()
	b := sampleBundle()
	var err error
	if b.Name, err = bundle.Name(minor, n); err != nil {
		t.Fatal(err)
	}
	b.KubernetesMinor, b.Build = minor, n
	return b
}

func TestPushListPull(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	host := startRegistry(t)
	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())

	names, err := bundle.List(ctx, host, "flotilla", "1.36")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(BeEmpty(), "a repository that does not exist has no bundles")

	for _, b := range []bundle.Bundle{build(t, "1.36", 2), build(t, "1.36", 10), build(t, "1.36", 1), build(t, "1.35", 4)} {
		s, err := bundle.Sign(b, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bundle.Push(ctx, host+"/flotilla", s)).To(Succeed())
	}
	names, err = bundle.List(ctx, host, "flotilla", "1.36")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(Equal([]string{"v1-36-1", "v1-36-2", "v1-36-10"}), "builds sort as numbers, newest last")

	pulled, err := bundle.Pull(ctx, host+"/flotilla:v1-36-10")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Bundle).To(Equal(build(t, "1.36", 10)))
	g.Expect(bundle.Verify(pulled, &key.PublicKey)).To(Succeed())
	want, err := bundle.ManifestDigest(pulled)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Digest).To(Equal(want))

	byDigest, err := bundle.Pull(ctx, host+"/flotilla@"+pulled.Digest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byDigest.Bundle).To(Equal(pulled.Bundle))

	g.Expect(bundle.Push(ctx, host+"/flotilla:latest", pulled)).To(MatchError(ContainSubstring("the tag must be the bundle's name")))
}

func TestPulledBundlesThatMustNotBeUsed(t *testing.T) {
	ctx := context.Background()
	host := startRegistry(t)
	key, err := bundle.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	signed, err := bundle.Sign(build(t, "1.36", 1), key)
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.Push(ctx, host+"/flotilla", signed); err != nil {
		t.Fatal(err)
	}

	t.Run("an unsigned bundle pulls but does not verify", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(bundle.Push(ctx, host+"/unsigned", bundle.Signed{Bundle: build(t, "1.36", 1)})).To(Succeed())
		s, err := bundle.Pull(ctx, host+"/unsigned:v1-36-1")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bundle.Verify(s, &key.PublicKey)).To(MatchError(bundle.ErrUnsigned))
	})

	t.Run("content changed in the registry under the original signature does not verify", func(t *testing.T) {
		g := NewWithT(t)
		// Rewrite the artifact by hand as an attacker with push access would: same signature
		// annotation, another chart digest in the content.
		tampered := build(t, "1.36", 1)
		tampered.Packages[0].Versions[0].Digest = "sha256:00000000000000000000000000000000000000000000000000000000000000ff"
		content, err := bundle.Canonical(tampered)
		g.Expect(err).NotTo(HaveOccurred())
		orig, err := remote.Get(mustTag(g, host+"/flotilla:v1-36-1"))
		g.Expect(err).NotTo(HaveOccurred())
		var m v1.Manifest
		g.Expect(json.Unmarshal(orig.Manifest, &m)).To(Succeed())
		layer := static.NewLayer(content, bundle.ContentMediaType)
		repo := mustTag(g, host+"/tampered:v1-36-1")
		g.Expect(remote.WriteLayer(repo.Context(), layer)).To(Succeed())
		g.Expect(remote.WriteLayer(repo.Context(), static.NewLayer([]byte("{}"), bundle.EmptyConfigMediaType))).To(Succeed())
		m.Layers[0].Digest, _ = layer.Digest()
		m.Layers[0].Size = int64(len(content))
		raw, err := json.Marshal(m)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(remote.Put(repo, rawOCI(raw))).To(Succeed())

		s, err := bundle.Pull(ctx, repo.String())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s.Signature).To(Equal(signed.Signature))
		g.Expect(bundle.Verify(s, &key.PublicKey)).To(MatchError(bundle.ErrBadSignature))
	})

	t.Run("an old bundle tagged as a newer one is refused", func(t *testing.T) {
		g := NewWithT(t)
		desc, err := remote.Get(mustTag(g, host+"/flotilla:v1-36-1"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(remote.Tag(mustTag(g, host+"/flotilla:v1-36-7"), desc)).To(Succeed())
		_, err = bundle.Pull(ctx, host+"/flotilla:v1-36-7")
		g.Expect(err).To(MatchError(bundle.ErrNameMismatch))
	})

	t.Run("a Helm chart is not a bundle", func(t *testing.T) {
		g := NewWithT(t)
		img := static.NewLayer([]byte("x"), types.OCILayer)
		tag := mustTag(g, host+"/flotilla:v1-36-8")
		g.Expect(remote.WriteLayer(tag.Context(), img)).To(Succeed())
		d, _ := img.Digest()
		raw := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.cncf.helm.config.v1+json","size":1,"digest":"` + d.String() + `"},"layers":[]}`)
		g.Expect(remote.Put(tag, rawOCI(raw))).To(Succeed())
		_, err := bundle.Pull(ctx, tag.String())
		g.Expect(err).To(MatchError(ContainSubstring("not a Flotilla bundle")))
	})
}

func mustTag(g Gomega, s string) name.Tag {
	tag, err := name.NewTag(s)
	g.Expect(err).NotTo(HaveOccurred())
	return tag
}

type rawOCI []byte

func (r rawOCI) RawManifest() ([]byte, error)        { return r, nil }
func (r rawOCI) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

func TestPlainHTTPOnlyWhenAskedFor(t *testing.T) {
	g := NewWithT(t)
	host := startRegistry(t)

	strict, err := bundle.RemoteOptions(registryconn.Config{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = bundle.List(context.Background(), host, "flotilla", "1.36", strict...)
	g.Expect(err).To(MatchError(ContainSubstring("refusing plain HTTP")))

	plain, err := bundle.RemoteOptions(registryconn.Config{PlainHTTP: true})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = bundle.List(context.Background(), host, "flotilla", "1.36", plain...)
	g.Expect(err).NotTo(HaveOccurred())
}
