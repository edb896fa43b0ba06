package ociimage

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// CAFile is where Debian's ca-certificates package keeps the certificate authorities the base
// layer carries.
const CAFile = "/etc/ssl/certs/ca-certificates.crt"

// Image is an image made of one program of the binary cache.
type Image struct {
	// Name is the upstream reference the image stands for, such as registry.k8s.io/pause:3.10.
	Name string
	// Program is the program's name in a binaries.Set; the image runs /<Program>.
	Program string
	// User is the uid:gid the image runs as unless a Pod says otherwise; empty is root.
	User string
}

// Images Flotilla builds, by name.
var (
	// Pause holds the namespaces of every Pod sandbox; containerd runs it as its sandbox image.
	Pause = Image{Name: "registry.k8s.io/pause:3.10", Program: binaries.Pause, User: "65535:65535"}
	// CoreDNS is the cluster DNS of clusters with real nodes. It binds port 53, so it runs as
	// root (the Deployment drops every capability but NET_BIND_SERVICE).
	CoreDNS = Image{Name: "registry.k8s.io/coredns/coredns:v1.14.7", Program: binaries.CoreDNS}
	// HelloFlotilla is the web server of the hello-flotilla chart (port 8080).
	HelloFlotilla = Image{Name: "ghcr.io/flotilla-dev/hello-flotilla:0.1.0", Program: binaries.HelloFlotilla, User: "65532:65532"}
)

// Flotilla lists the images Flotilla builds: `flotilla image build` builds them all.
var Flotilla = []Image{Pause, CoreDNS, HelloFlotilla}

// Named returns the image of Flotilla whose program or upstream repository is name ("pause",
// "registry.k8s.io/pause").
func Named(name string) (Image, bool) {
	for _, img := range Flotilla {
		repo, _, _ := strings.Cut(img.Name, ":")
		if name == img.Program || name == repo || name == img.Name {
			return img, true
		}
	}
	return Image{}, false
}

// Build returns img made of the program at programPath, over the base layer with the
// certificate authorities of caFile (CAFile when empty).
func Build(img Image, programPath, caFile string) (v1.Image, error) {
	if caFile == "" {
		caFile = CAFile
	}
	ca, err := os.ReadFile(caFile) //nolint:gosec // the host's CA bundle
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("building %s: %s is missing: install Debian's ca-certificates package (apt-get install ca-certificates)", img.Name, caFile)
	}
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", img.Name, err)
	}
	program, err := os.ReadFile(programPath) //nolint:gosec // a program of the binary cache
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", img.Name, err)
	}
	base, err := layer(baseFiles(ca))
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", img.Name, err)
	}
	top, err := layer([]file{{path: img.Program, mode: 0o755, data: program}})
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", img.Name, err)
	}
	out, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.OCIManifestSchema1), base, top)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", img.Name, err)
	}
	out = mutate.ConfigMediaType(out, types.OCIConfigJSON)
	cfg, err := out.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", img.Name, err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS = "linux"
	cfg.Architecture = runtime.GOARCH
	cfg.Config.Entrypoint = []string{"/" + img.Program}
	cfg.Config.Env = []string{"PATH=/", "SSL_CERT_FILE=" + CAFile}
	cfg.Config.User = img.User
	cfg.Config.WorkingDir = "/"
	out, err = mutate.ConfigFile(out, cfg)
	if err != nil {
		return nil, fmt.Errorf("building %s: %w", img.Name, err)
	}
	return out, nil
}

// Push writes image to ref with opts (remote.WithTransport, remote.WithAuth).
func Push(ctx context.Context, ref string, image v1.Image, opts ...remote.Option) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := remote.Write(tag, image, append(opts, remote.WithContext(ctx))...); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	return nil
}

// MirrorReference returns where the mirror registry (host:port, with an optional path prefix)
// holds the image upstream names: <registry>/<MirrorPath>, by tag or, for an image pinned by
// digest, by digest.
func MirrorReference(registry, upstream string) (string, error) {
	repository, tag, digest, err := MirrorPath(upstream)
	if err != nil {
		return "", err
	}
	if digest != "" {
		return registry + "/" + repository + "@" + digest, nil
	}
	return registry + "/" + repository + ":" + tag, nil
}

// MirrorPath returns the repository path a mirror holds the image upstream names under,
// <upstream host>/<repository> with Docker Hub as docker.io and its official images under
// library/, and the tag or digest containerd asks the mirror for: the digest when upstream
// names one (repository@sha256:..., with or without a tag), else the tag.
func MirrorPath(upstream string) (repository, tag, digest string, err error) {
	var ref name.Reference
	if strings.Contains(upstream, "@") {
		ref, err = name.NewDigest(upstream)
	} else if ref, err = name.NewTag(upstream, name.StrictValidation); err != nil && strings.Contains(upstream, ":") {
		// Docker's short forms ("nginx:1.27") are not strict references; a default tag is
		// not accepted either: mirrors hold what is asked for.
		if ref, err = name.NewTag(upstream); err == nil && !strings.HasSuffix(upstream, ":"+ref.Identifier()) {
			err = errors.New("no tag")
		}
	}
	if err != nil || ref == nil {
		return "", "", "", fmt.Errorf("image %q: name it with a tag, such as registry.k8s.io/pause:3.10, or a digest", upstream)
	}
	host := ref.Context().RegistryStr()
	if host == name.DefaultRegistry {
		host = "docker.io"
	}
	repository = host + "/" + ref.Context().RepositoryStr()
	if d, ok := ref.(name.Digest); ok {
		return repository, "", d.DigestStr(), nil
	}
	return repository, ref.Identifier(), "", nil
}

// file is one regular file or directory of a layer.
type file struct {
	path string
	mode int64
	data []byte
	dir  bool
}

// baseFiles are the files of the base layer.
func baseFiles(ca []byte) []file {
	return []file{
		{path: "etc", mode: 0o755, dir: true},
		{path: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\n" +
			"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n")},
		{path: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\nnobody:x:65534:\n")},
		{path: "etc/ssl", mode: 0o755, dir: true},
		{path: "etc/ssl/certs", mode: 0o755, dir: true},
		{path: strings.TrimPrefix(CAFile, "/"), mode: 0o644, data: ca},
		{path: "tmp", mode: 0o1777, dir: true},
	}
}

// layer returns a gzip-compressed layer of files, with time 0 and root ownership.
func layer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		hdr := &tar.Header{Name: f.path, Mode: f.mode, Typeflag: tar.TypeReg, Size: int64(len(f.data)), Format: tar.FormatPAX}
		if f.dir {
			hdr.Name += "/"
			hdr.Typeflag = tar.TypeDir
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
