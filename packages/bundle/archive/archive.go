package archive

import (
	"archive/tar"
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// Annotations of the manifests in an archive's index.json.
const (
	// RefNameAnnotation is the artifact's tag: the bundle's name, or the chart's version.
	RefNameAnnotation = "org.opencontainers.image.ref.name"
	// RepositoryAnnotation is the repository path the artifact came from, without the
	// registry's host, such as "flotilla/hello-flotilla".
	RepositoryAnnotation = "dev.flotilla.archive.repository"
	// RegistryAnnotation is the registry host it came from (for messages only).
	RegistryAnnotation = "dev.flotilla.archive.registry"
	// KindAnnotation is "bundle", "chart" or "image".
	KindAnnotation = "dev.flotilla.archive.kind"
)

// Kinds of artifacts.
const (
	KindBundle = "bundle"
	KindChart  = "chart"
	KindImage  = "image"
)

// Artifact is one manifest (or image index) of an archive.
type Artifact struct {
	Kind string `json:"kind"`
	// Repository is the path without the registry host: an image's is its mirror path
	// <upstream host>/<repository> (ociimage.MirrorPath). Tag is the bundle name, the chart
	// version or the image's tag; empty for an image pinned by digest.
	Repository string `json:"repository"`
	Tag        string `json:"tag"`
	Digest     string `json:"digest"`
	// Ref is where Export read it or Import pushed it.
	Ref string `json:"ref"`
}

// ExportOptions say which bundles to export and how to reach their registry.
type ExportOptions struct {
	// Registry and Repository are the bundle repository, "host[:port]" and a path.
	Registry, Repository string
	// KubernetesMinors get their newest bundle exported each, such as "1.36".
	KubernetesMinors []string
	// Connection reaches the bundles' registry, the registries of the charts they name and the
	// image registry.
	Connection registryconn.Config
	// ImageRegistry holds the images in the mirror layout (package ociimage), as `flotilla image
	// build` pushes them: "host[:port]" with an optional path prefix; Registry when empty.
	ImageRegistry string
	// SkipImages exports the bundles and charts only.
	SkipImages bool
	// Path is the tar file written (atomically).
	Path string
}

// Export writes the newest bundle of each minor, every chart version it names and, unless
// o.SkipImages, the images those charts and real nodes run into the tar file o.Path (see the
// package doc). A minor without a bundle is an error: the archive would not install its
// packages; so is an image missing from the image registry.
func Export(ctx context.Context, o ExportOptions) ([]Artifact, error) {
	if len(o.KubernetesMinors) == 0 {
		return nil, errors.New("no Kubernetes minor to export the bundles of")
	}
	opts, err := bundle.RemoteOptions(o.Connection)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "flotilla-export-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	dir := filepath.Join(tmp, "layout")
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, fmt.Errorf("writing the image layout: %w", err)
	}
	e := &exporter{layout: l, opts: append(opts, remote.WithContext(ctx)), seen: map[string]bool{}}
	var bundles []bundle.Bundle
	for _, minor := range o.KubernetesMinors {
		b, err := e.exportNewest(ctx, o.Registry, o.Repository, minor)
		if err != nil {
			return nil, err
		}
		bundles = append(bundles, b)
	}
	if !o.SkipImages {
		imageRegistry := cmp.Or(o.ImageRegistry, o.Registry)
		if _, _, err := registryconn.SplitRegistry(imageRegistry); err != nil {
			return nil, fmt.Errorf("image registry: %w", err)
		}
		if err := e.exportImages(imageRegistry, bundles); err != nil {
			return nil, err
		}
	}
	if err := writeTar(dir, o.Path); err != nil {
		return nil, err
	}
	return e.written, nil
}

// exporter writes artifacts into an image layout, each once.
type exporter struct {
	layout  layout.Path
	opts    []remote.Option
	seen    map[string]bool
	written []Artifact
}

// exportNewest writes the newest bundle of minor in registry/repository and its charts, and
// returns the bundle.
func (e *exporter) exportNewest(ctx context.Context, registry, repository, minor string) (bundle.Bundle, error) {
	names, err := bundle.List(ctx, registry, repository, minor, e.opts...)
	if err != nil {
		return bundle.Bundle{}, err
	}
	if len(names) == 0 {
		return bundle.Bundle{}, fmt.Errorf("%s/%s holds no bundle for Kubernetes %s: publish one (flotilla registry publish --kubernetes-minor %s)", registry, repository, minor, minor)
	}
	newest := names[len(names)-1]
	ref := registry + "/" + repository + ":" + newest
	s, err := bundle.Pull(ctx, ref, e.opts...)
	if err != nil {
		return bundle.Bundle{}, err
	}
	if err := e.add(KindBundle, registry, repository, newest, ref+"@"+s.Digest); err != nil {
		return bundle.Bundle{}, err
	}
	for _, p := range s.Bundle.Packages {
		for _, v := range p.Versions {
			chartRef := p.Source.Registry + "/" + p.Source.Repository + "@" + v.Digest
			if err := e.add(KindChart, p.Source.Registry, p.Source.Repository, v.Version, chartRef); err != nil {
				return bundle.Bundle{}, err
			}
		}
	}
	return s.Bundle, nil
}

// exportImages writes the images the signed bundles name (bundle.Images: those their charts and
// real nodes run), each read by its recorded digest from its mirror path in imageRegistry, so
// that what the archive carries is what the bundle's signer pinned.
func (e *exporter) exportImages(imageRegistry string, bundles []bundle.Bundle) error {
	for _, b := range bundles {
		if len(b.Images) == 0 {
			return fmt.Errorf("bundle %s records no images, so their digests are unknown: publish the bundles again with the images in the registry ('flotilla image build', then 'flotilla registry publish'), or export without images (--skip-images)", b.Name)
		}
		for _, image := range b.Images {
			repository, tag, _, err := ociimage.MirrorPath(image.Name)
			if err != nil {
				return fmt.Errorf("image of bundle %s: %w", b.Name, err)
			}
			host, prefix, _ := registryconn.SplitRegistry(imageRegistry) // checked by the caller
			ref := host + "/" + strings.Trim(prefix+"/"+repository, "/") + "@" + image.Digest
			if err := e.add(KindImage, host, repository, tag, ref); err != nil {
				return fmt.Errorf("image %s, which bundle %s pins at %s, cannot be read from the image registry as %s: push it there (`flotilla image build` pushes Flotilla's own images), or export without images (--skip-images): %w",
					image.Name, b.Name, image.Digest, ref, err)
			}
		}
	}
	return nil
}

// add pulls ref (by digest, or an image by tag) and writes it, with all it refers to (every
// platform of an image index), with its repository and tag, unless it is written.
func (e *exporter) add(kind, registry, repository, tag, ref string) error {
	key := strings.Join([]string{kind, repository, tag, ref}, " ")
	if e.seen[key] {
		return nil
	}
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, ref, err)
	}
	desc, err := remote.Get(r, e.opts...)
	if err != nil {
		return fmt.Errorf("pulling %s %s: %w", kind, ref, err)
	}
	annotations := layout.WithAnnotations(map[string]string{
		RefNameAnnotation: tag, RepositoryAnnotation: repository, RegistryAnnotation: registry, KindAnnotation: kind,
	})
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err == nil {
			err = e.layout.AppendIndex(idx, annotations)
		}
		if err != nil {
			return fmt.Errorf("writing %s %s into the archive: %w", kind, ref, err)
		}
	} else {
		img, err := desc.Image()
		if err == nil {
			err = e.layout.AppendImage(img, annotations)
		}
		if err != nil {
			return fmt.Errorf("writing %s %s into the archive: %w", kind, ref, err)
		}
	}
	e.seen[key] = true
	e.written = append(e.written, Artifact{Kind: kind, Repository: repository, Tag: tag, Digest: desc.Digest.String(), Ref: ref})
	return nil
}

// writeTar writes the files below dir into the tar file path, atomically.
func writeTar(dir, path string) error {
	err := atomicfile.WriteFrom(path, func(w io.Writer) error {
		tw := tar.NewWriter(w)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, Size: info.Size(), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			f, err := os.Open(p) //nolint:gosec // a file of the layout this function wrote
			if err != nil {
				return err
			}
			defer func() { _ = f.Close() }()
			_, err = io.Copy(tw, f)
			return err
		})
		if err != nil {
			return err
		}
		return tw.Close()
	})
	if err != nil {
		return fmt.Errorf("writing the archive %s: %w", path, err)
	}
	return nil
}

// ImportOptions say where to push an archive.
type ImportOptions struct {
	// Path is the archive Export wrote.
	Path string
	// Registry is "host[:port]" with an optional path prefix the repositories go below
	// (registryconn.SplitRegistry).
	Registry string
	// Connection reaches the registry.
	Connection registryconn.Config
	// PublicKey verifies the archive's bundles; only what they name is pushed (see Verify).
	PublicKey *ecdsa.PublicKey
}

// layoutFile matches the files an archive may hold.
var layoutFile = regexp.MustCompile(`^(oci-layout|index\.json|blobs/sha256/[0-9a-f]{64})$`)

// maxArchiveFile bounds one file of an archive (a chart or bundle blob, the index).
const maxArchiveFile = 1 << 30

// Import checks the archive o.Path against its bundles signed for o.PublicKey (Verify), then
// pushes every artifact to o.Registry, at <prefix>/<repository>:<tag> (see the package doc),
// and returns them. An archive that does not verify pushes nothing.
func Import(ctx context.Context, o ImportOptions) ([]Artifact, error) {
	host, prefix, err := registryconn.SplitRegistry(o.Registry)
	if err != nil {
		return nil, err
	}
	if o.PublicKey == nil {
		return nil, errors.New("importing an archive needs the public key its bundles are signed for")
	}
	opts, err := bundle.RemoteOptions(o.Connection)
	if err != nil {
		return nil, err
	}
	opts = append(opts, remote.WithContext(ctx))
	dir, err := os.MkdirTemp("", "flotilla-import-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := extract(o.Path, dir); err != nil {
		return nil, err
	}
	l, err := layout.FromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("%s is not an archive of 'flotilla packages export': %w", o.Path, err)
	}
	idx, err := l.ImageIndex()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.Path, err)
	}
	manifest, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", o.Path, err)
	}
	if err := Verify(l, manifest.Manifests, o.PublicKey); err != nil {
		return nil, fmt.Errorf("%s: %w; nothing was pushed", o.Path, err)
	}
	var pushed []Artifact
	for _, desc := range manifest.Manifests {
		a, err := importOne(l, desc, host, prefix, opts)
		if err != nil {
			return pushed, err
		}
		pushed = append(pushed, a)
	}
	return pushed, nil
}

// Verify checks the manifests of an archive's layout l against its bundles: every bundle is
// signed for pub; every chart is a chart version a bundle names, at that version, with that
// digest, in that repository; every image is an image a bundle names (bundle.Images), at its
// mirror path and tag, with that digest; every manifest's bytes have its digest. So an archive
// pushes nothing but what the bundles' signer published, and only into the repositories the
// bundles name (and the bundles' own). The error names the first artifact that fails.
func Verify(l layout.Path, manifests []v1.Descriptor, pub *ecdsa.PublicKey) error {
	named, err := signedContents(l, manifests, pub)
	if err != nil {
		return err
	}
	for _, desc := range manifests {
		if err := named.check(l, desc); err != nil {
			return err
		}
	}
	return nil
}

// contents is what an archive's signed bundles name: their charts and images, each
// <repository>@<digest> with its tag, and the bundles' own repositories.
type contents struct {
	charts, images map[string]string
	bundleRepos    map[string]bool
}

// signedContents reads the bundles among manifests, verifies each for pub, and returns what they
// name.
func signedContents(l layout.Path, manifests []v1.Descriptor, pub *ecdsa.PublicKey) (contents, error) {
	c := contents{charts: map[string]string{}, images: map[string]string{}, bundleRepos: map[string]bool{}}
	for _, desc := range manifests {
		if desc.Annotations[KindAnnotation] != KindBundle {
			continue
		}
		repo, tag := desc.Annotations[RepositoryAnnotation], desc.Annotations[RefNameAnnotation]
		s, err := verifiedBundle(l, desc, tag, pub)
		if err != nil {
			return c, fmt.Errorf("bundle %s %s: %w", repo, tag, err)
		}
		c.bundleRepos[repo] = true
		for _, p := range s.Bundle.Packages {
			for _, v := range p.Versions {
				c.charts[p.Source.Repository+"@"+v.Digest] = v.Version
			}
		}
		for _, image := range s.Bundle.Images {
			repository, imageTag, _, err := ociimage.MirrorPath(image.Name)
			if err != nil {
				return c, fmt.Errorf("bundle %s: %w", s.Bundle.Name, err)
			}
			c.images[repository+"@"+image.Digest] = imageTag
		}
	}
	if len(c.bundleRepos) == 0 {
		return c, errors.New("the archive holds no bundle: was it written by 'flotilla packages export'?")
	}
	return c, nil
}

// verifiedBundle reads the bundle of desc from l, checks its digest, its signature for pub and
// its content.
func verifiedBundle(l layout.Path, desc v1.Descriptor, tag string, pub *ecdsa.PublicKey) (bundle.Signed, error) {
	img, err := l.Image(desc.Digest)
	if err != nil {
		return bundle.Signed{}, err
	}
	if err := checkDigest(img, desc.Digest); err != nil {
		return bundle.Signed{}, err
	}
	s, err := bundle.FromImage(img, tag)
	if err != nil {
		return bundle.Signed{}, err
	}
	if err := bundle.Verify(s, pub); err != nil {
		return bundle.Signed{}, err
	}
	return s, s.Bundle.Validate()
}

// check fails for a manifest the bundles do not name, at its repository, tag and digest, or
// whose bytes are not its digest's; a bundle may not go to a repository of a named chart or
// image.
func (c contents) check(l layout.Path, desc v1.Descriptor) error {
	kind, repo, tag := desc.Annotations[KindAnnotation], desc.Annotations[RepositoryAnnotation], desc.Annotations[RefNameAnnotation]
	var named map[string]string
	switch kind {
	case KindBundle:
		if isNamedRepository(c.charts, repo) || isNamedRepository(c.images, repo) {
			return fmt.Errorf("bundle %s would go to repository %s, which holds a chart or image the bundles name: refusing to overwrite it", tag, repo)
		}
		return nil
	case KindChart:
		named = c.charts
	case KindImage:
		named = c.images
	default:
		return fmt.Errorf("manifest %s of the archive is of kind %q, not bundle, chart or image", desc.Digest, kind)
	}
	want, ok := named[repo+"@"+desc.Digest.String()]
	if !ok || want != tag {
		return fmt.Errorf("the archive would push %s %s:%s (%s), which no bundle signed for the key names: refusing to write repository %s", kind, repo, tag, desc.Digest, repo)
	}
	if err := checkManifest(l, desc); err != nil {
		return fmt.Errorf("%s %s:%s: %w", kind, repo, tag, err)
	}
	return nil
}

// isNamedRepository says whether one of the keys (<repository>@<digest>) of named is in repo.
func isNamedRepository(named map[string]string, repo string) bool {
	for key := range named {
		if r, _, _ := strings.Cut(key, "@"); r == repo {
			return true
		}
	}
	return false
}

// checkManifest checks that the manifest or index desc of l has desc's digest.
func checkManifest(l layout.Path, desc v1.Descriptor) error {
	if desc.MediaType.IsIndex() {
		idx, err := l.ImageIndex()
		if err == nil {
			idx, err = idx.ImageIndex(desc.Digest)
		}
		if err != nil {
			return err
		}
		return checkDigest(idx, desc.Digest)
	}
	img, err := l.Image(desc.Digest)
	if err != nil {
		return err
	}
	return checkDigest(img, desc.Digest)
}

// checkDigest checks that the bytes of a manifest are those of digest (a layout's files are not
// checked when they are read).
func checkDigest(m interface{ RawManifest() ([]byte, error) }, digest v1.Hash) error {
	raw, err := m.RawManifest()
	if err != nil {
		return err
	}
	sum := sha256.Sum256(raw)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest.String() {
		return fmt.Errorf("the manifest's bytes have digest %s, not %s", got, digest)
	}
	return nil
}

// importOne pushes the manifest or image index desc of l to host, below prefix.
func importOne(l layout.Path, desc v1.Descriptor, host, prefix string, opts []remote.Option) (Artifact, error) {
	a := Artifact{Kind: desc.Annotations[KindAnnotation], Repository: desc.Annotations[RepositoryAnnotation],
		Tag: desc.Annotations[RefNameAnnotation], Digest: desc.Digest.String()}
	repository := strings.Trim(prefix+"/"+a.Repository, "/")
	// An image pinned by digest has no tag: it is pushed by its digest.
	var ref name.Reference
	var err error
	if a.Tag == "" && a.Kind == KindImage {
		ref, err = name.NewDigest(host+"/"+repository+"@"+a.Digest, name.StrictValidation)
	} else {
		ref, err = name.NewTag(host+"/"+repository+":"+a.Tag, name.StrictValidation)
	}
	if err != nil || a.Repository == "" {
		return a, fmt.Errorf("manifest %s of the archive: no valid %s and %s annotations (%q, %q): was it written by 'flotilla packages export'?",
			a.Digest, RepositoryAnnotation, RefNameAnnotation, a.Repository, a.Tag)
	}
	if desc.MediaType.IsIndex() {
		idx, err := l.ImageIndex()
		if err == nil {
			idx, err = idx.ImageIndex(desc.Digest)
		}
		if err != nil {
			return a, fmt.Errorf("reading %s from the archive: %w", a.Digest, err)
		}
		if err := remote.WriteIndex(ref, idx, opts...); err != nil {
			return a, fmt.Errorf("pushing %s %s: %w", a.Kind, ref, err)
		}
	} else {
		img, err := l.Image(desc.Digest)
		if err != nil {
			return a, fmt.Errorf("reading %s from the archive: %w", a.Digest, err)
		}
		if err := remote.Write(ref, img, opts...); err != nil {
			return a, fmt.Errorf("pushing %s %s: %w", a.Kind, ref, err)
		}
	}
	a.Ref = ref.String()
	if a.Tag != "" {
		a.Ref += "@" + a.Digest
	}
	return a, nil
}

// extract unpacks the tar file path into dir, accepting only the files of an OCI image layout
// (no links, no paths out of dir).
func extract(path, dir string) error {
	f, err := os.Open(path) //nolint:gosec // the archive the user names
	if err != nil {
		return fmt.Errorf("opening the archive: %w", err)
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the archive %s: %w", path, err)
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		clean := strings.TrimPrefix(filepath.ToSlash(filepath.Clean(h.Name)), "./")
		if h.Typeflag != tar.TypeReg || !layoutFile.MatchString(clean) || h.Size > maxArchiveFile {
			return fmt.Errorf("the archive %s holds %q, which is not a file of an OCI image layout: was it written by 'flotilla packages export'?", path, h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(clean))
		if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
			return err
		}
		out, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600) //nolint:gosec // a checked layout path below dir
		if err != nil {
			return err
		}
		_, err = io.Copy(out, io.LimitReader(tr, maxArchiveFile))
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("extracting %s: %w", h.Name, err)
		}
	}
}
