package ociimage

import (
	"archive/tar"
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
)

func TestMirrorReference(t *testing.T) {
	tests := []struct {
		name     string
		upstream string
		want     string
		wantErr  string
	}{
		{name: "a registry.k8s.io image is kept under its host", upstream: "registry.k8s.io/pause:3.10", want: "127.0.0.1:5001/registry.k8s.io/pause:3.10"},
		{name: "a nested repository keeps its path", upstream: "registry.k8s.io/coredns/coredns:v1.14.7", want: "127.0.0.1:5001/registry.k8s.io/coredns/coredns:v1.14.7"},
		{name: "a ghcr.io image is kept under ghcr.io", upstream: "ghcr.io/flotilla-dev/hello-flotilla:0.1.0", want: "127.0.0.1:5001/ghcr.io/flotilla-dev/hello-flotilla:0.1.0"},
		{name: "a Docker Hub short name is an official image of docker.io", upstream: "nginx:1.27-alpine", want: "127.0.0.1:5001/docker.io/library/nginx:1.27-alpine"},
		{name: "docker.io is named as containerd names it", upstream: "docker.io/bitnami/redis:7", want: "127.0.0.1:5001/docker.io/bitnami/redis:7"},
		{name: "an image pinned by digest is held by its digest", upstream: "registry.k8s.io/pause@sha256:" + strings.Repeat("a", 64), want: "127.0.0.1:5001/registry.k8s.io/pause@sha256:" + strings.Repeat("a", 64)},
		{name: "a digest wins over a tag, as containerd asks for the digest", upstream: "nginx:1.27@sha256:" + strings.Repeat("b", 64), want: "127.0.0.1:5001/docker.io/library/nginx@sha256:" + strings.Repeat("b", 64)},
		{name: "a registry's port is not a tag", upstream: "localhost:5000/app", wantErr: "name it with a tag"},
		{name: "an image without a tag is refused", upstream: "registry.k8s.io/pause", wantErr: "name it with a tag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := MirrorReference("127.0.0.1:5001", tt.upstream)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestNamedFindsAnImageByProgramOrRepository(t *testing.T) {
	g := NewWithT(t)
	for _, name := range []string{"pause", "registry.k8s.io/pause", "registry.k8s.io/pause:3.10"} {
		img, ok := Named(name)
		g.Expect(ok).To(BeTrue(), name)
		g.Expect(img).To(Equal(Pause))
	}
	_, ok := Named("nginx")
	g.Expect(ok).To(BeFalse())
}

// program writes a file standing for a static program.
func program(t *testing.T, content string) string {
	path := filepath.Join(t.TempDir(), "prog")
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestBuildMakesAReproducibleImageThatRunsTheProgram(t *testing.T) {
	g := NewWithT(t)
	ca := filepath.Join(t.TempDir(), "ca.crt")
	g.Expect(os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\n"), 0o644)).To(Succeed())
	prog := program(t, "\x7fELF pretend")

	img, err := Build(HelloFlotilla, prog, ca)
	g.Expect(err).NotTo(HaveOccurred())
	again, err := Build(HelloFlotilla, prog, ca)
	g.Expect(err).NotTo(HaveOccurred())
	d1, err := img.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	d2, err := again.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d1).To(Equal(d2), "the same program gives the same image")

	other, err := Build(HelloFlotilla, program(t, "\x7fELF changed"), ca)
	g.Expect(err).NotTo(HaveOccurred())
	d3, err := other.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d3).NotTo(Equal(d1))

	cfg, err := img.ConfigFile()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.OS).To(Equal("linux"))
	g.Expect(cfg.Config.Entrypoint).To(Equal([]string{"/hello-flotilla"}))
	g.Expect(cfg.Config.User).To(Equal("65532:65532"))
	mt, err := img.MediaType()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(mt)).To(Equal("application/vnd.oci.image.manifest.v1+json"))

	files := map[string]*tar.Header{}
	contents := map[string]string{}
	tr := tar.NewReader(mutate.Extract(img))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		files[hdr.Name] = hdr
		data, err := io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
		contents[hdr.Name] = string(data)
	}
	g.Expect(contents).To(HaveKeyWithValue("hello-flotilla", "\x7fELF pretend"))
	g.Expect(files["hello-flotilla"].Mode).To(Equal(int64(0o755)))
	g.Expect(contents).To(HaveKeyWithValue("etc/ssl/certs/ca-certificates.crt", "-----BEGIN CERTIFICATE-----\n"))
	g.Expect(contents["etc/passwd"]).To(ContainSubstring("nonroot:x:65532:65532:"))
	g.Expect(files).To(HaveKey("tmp"))
	g.Expect(files["tmp"].Mode).To(Equal(int64(0o1777)))
}

func TestBuildWithoutTheCABundleNamesTheDebianPackage(t *testing.T) {
	g := NewWithT(t)
	_, err := Build(Pause, program(t, "x"), filepath.Join(t.TempDir(), "missing.crt"))
	g.Expect(err).To(MatchError(ContainSubstring("install Debian's ca-certificates package")))
}

func TestPushedImagesArePulledBackFromTheMirrorPath(t *testing.T) {
	g := NewWithT(t)
	handler, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(handler)
	defer srv.Close()
	registry := strings.TrimPrefix(srv.URL, "http://")

	ca := filepath.Join(t.TempDir(), "ca.crt")
	g.Expect(os.WriteFile(ca, []byte("certs"), 0o644)).To(Succeed())
	img, err := Build(Pause, program(t, "pause program"), ca)
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := MirrorReference(registry, Pause.Name)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Push(context.Background(), ref, img)).To(Succeed())

	parsed, err := name.ParseReference(ref, name.Insecure)
	g.Expect(err).NotTo(HaveOccurred())
	pulled, err := remote.Image(parsed)
	g.Expect(err).NotTo(HaveOccurred())
	want, err := img.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	got, err := pulled.Digest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(want))
}
