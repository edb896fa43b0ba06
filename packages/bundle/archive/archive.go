package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
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
	// KindAnnotation is "bundle" or "chart".
	KindAnnotation = "dev.flotilla.archive.kind"
)

// Kinds of artifacts.
const (
	KindBundle = "bundle"
	KindChart  = "chart"
)

// Artifact is one manifest of an archive.
type Artifact struct {
	Kind string `json:"kind"`
	// Repository is the path without the registry host; Tag the bundle name or chart version.
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
	// Connection reaches the bundles' registry and the registries of the charts they name.
	Connection registryconn.Config
	// Path is the tar file written (atomically).
	Path string
}

// Export writes the newest bundle of each minor and every chart version it names into the tar
// file o.Path (see the package doc). A minor without a bundle is an error: the archive would
// not install its packages.
func Export(ctx context.Context, o ExportOptions) ([]Artifact, error) {
	if len(o.KubernetesMinors) == 0 {
		return nil, errors.New("no Kubernetes minor to export the bundles of")
	}
	opts, err := bundle.RemoteOptions(o.Connection)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "flotilla-export-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return nil, fmt.Errorf("writing the image layout: %w", err)
	}
	e := &exporter{layout: l, opts: append(opts, remote.WithContext(ctx))}
	for _, minor := range o.KubernetesMinors {
		if err := e.exportNewest(ctx, o.Registry, o.Repository, minor); err != nil {
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
	written []Artifact
}

// exportNewest writes the newest bundle of minor in registry/repository and its charts.
func (e *exporter) exportNewest(ctx context.Context, registry, repository, minor string) error {
	names, err := bundle.List(ctx, registry, repository, minor, e.opts...)
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("%s/%s holds no bundle for Kubernetes %s: publish one (flotilla registry publish --kubernetes-minor %s)", registry, repository, minor, minor)
	}
	newest := names[len(names)-1]
	ref := registry + "/" + repository + ":" + newest
	s, err := bundle.Pull(ctx, ref, e.opts...)
	if err != nil {
		return err
	}
	if err := e.add(KindBundle, registry, repository, newest, ref+"@"+s.Digest); err != nil {
		return err
	}
	for _, p := range s.Bundle.Packages {
		for _, v := range p.Versions {
			chartRef := p.Source.Registry + "/" + p.Source.Repository + "@" + v.Digest
			if err := e.add(KindChart, p.Source.Registry, p.Source.Repository, v.Version, chartRef); err != nil {
				return err
			}
		}
	}
	return nil
}

// add pulls ref (by digest) and writes it with its repository and tag, unless it is written.
func (e *exporter) add(kind, registry, repository, tag, ref string) error {
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("%s %s: %w", kind, ref, err)
	}
	img, err := remote.Image(r, e.opts...)
	if err != nil {
		return fmt.Errorf("pulling %s %s: %w", kind, ref, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("pulling %s %s: %w", kind, ref, err)
	}
	a := Artifact{Kind: kind, Repository: repository, Tag: tag, Digest: digest.String(), Ref: ref}
	if slices.Contains(e.written, a) {
		return nil
	}
	if err := e.layout.AppendImage(img, layout.WithAnnotations(map[string]string{
		RefNameAnnotation: tag, RepositoryAnnotation: repository, RegistryAnnotation: registry, KindAnnotation: kind,
	})); err != nil {
		return fmt.Errorf("writing %s %s into the archive: %w", kind, ref, err)
	}
	e.written = append(e.written, a)
	return nil
}

// writeTar writes the files below dir into the tar file path, atomically. The archive is built
// in memory: bundles and charts are small.
func writeTar(dir, path string) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
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
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = atomicfile.Write(path, buf.Bytes())
	}
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
}

// layoutFile matches the files an archive may hold.
var layoutFile = regexp.MustCompile(`^(oci-layout|index\.json|blobs/sha256/[0-9a-f]{64})$`)

// maxArchiveFile bounds one file of an archive (a chart or bundle blob, the index).
const maxArchiveFile = 1 << 30

// Import pushes every artifact of the archive o.Path to o.Registry, at <prefix>/<repository>:<tag>
// (see the package doc), and returns them.
func Import(ctx context.Context, o ImportOptions) ([]Artifact, error) {
	host, prefix, err := registryconn.SplitRegistry(o.Registry)
	if err != nil {
		return nil, err
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

// importOne pushes the manifest desc of l to host, below prefix.
func importOne(l layout.Path, desc v1.Descriptor, host, prefix string, opts []remote.Option) (Artifact, error) {
	a := Artifact{Kind: desc.Annotations[KindAnnotation], Repository: desc.Annotations[RepositoryAnnotation],
		Tag: desc.Annotations[RefNameAnnotation], Digest: desc.Digest.String()}
	repository := strings.Trim(prefix+"/"+a.Repository, "/")
	tag, err := name.NewTag(host+"/"+repository+":"+a.Tag, name.StrictValidation)
	if err != nil || a.Repository == "" {
		return a, fmt.Errorf("manifest %s of the archive: no valid %s and %s annotations (%q, %q): was it written by 'flotilla packages export'?",
			a.Digest, RepositoryAnnotation, RefNameAnnotation, a.Repository, a.Tag)
	}
	img, err := l.Image(desc.Digest)
	if err != nil {
		return a, fmt.Errorf("reading %s from the archive: %w", a.Digest, err)
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return a, fmt.Errorf("pushing %s %s: %w", a.Kind, tag, err)
	}
	a.Ref = tag.String() + "@" + a.Digest
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
