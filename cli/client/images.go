package client

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// BuildImagesOptions say which of Flotilla's images to build and where to push them.
type BuildImagesOptions struct {
	// Registry is the mirror registry's host[:port], DefaultRegistryAddress when empty.
	Registry string
	// Images name the images (a program such as "pause", or an upstream repository such as
	// registry.k8s.io/pause); every image of ociimage.Flotilla when empty.
	Images []string
	// Connection says how to reach the registry.
	Connection registryconn.Config
}

// BuiltImage is one image BuildImages pushed.
type BuiltImage struct {
	// Name is the upstream name Pods use, such as registry.k8s.io/pause:3.10.
	Name string `json:"name"`
	// Reference is where the mirror holds it: <registry>/<upstream host>/<repository>:<tag>.
	Reference string `json:"reference"`
	// Digest is the manifest's digest.
	Digest string `json:"digest"`
}

// BuildImages builds Flotilla's images from the programs of the binary cache (`flotilla
// binaries build --nodes`), pushes each to its mirror path in the registry (see package
// ociimage), where the containerd of real nodes finds it, and records its digest in the home
// (ociimage.RecordPath), by which real nodes pull it.
func (c *Client) BuildImages(ctx context.Context, o BuildImagesOptions) ([]BuiltImage, error) {
	if o.Registry == "" {
		o.Registry = DefaultRegistryAddress
	}
	images := ociimage.Flotilla
	if len(o.Images) > 0 {
		images = nil
		for _, n := range o.Images {
			img, ok := ociimage.Named(n)
			if !ok {
				return nil, fmt.Errorf("%q is not an image Flotilla builds: use one of %s", n, strings.Join(imageNames(), ", "))
			}
			images = append(images, img)
		}
	}
	set, err := c.imagePrograms()
	if err != nil {
		return nil, err
	}
	conn, err := c.withPushCredential(o.Connection, o.Registry)
	if err != nil {
		return nil, err
	}
	opts, err := bundle.RemoteOptions(conn)
	if err != nil {
		return nil, err
	}
	built := make([]BuiltImage, 0, len(images))
	for _, img := range images {
		b, err := buildImage(ctx, img, set.Path(img.Program), o.Registry, opts)
		if err != nil {
			return built, errors.Join(err, c.recordImages(built))
		}
		built = append(built, b)
	}
	return built, c.recordImages(built)
}

// buildImage builds img from the program at programPath and pushes it to its mirror path in
// registry.
func buildImage(ctx context.Context, img ociimage.Image, programPath, registry string, opts []remote.Option) (BuiltImage, error) {
	image, err := ociimage.Build(img, programPath, "")
	if err != nil {
		return BuiltImage{}, err
	}
	ref, err := ociimage.MirrorReference(registry, img.Name)
	if err != nil {
		return BuiltImage{}, err
	}
	if err := ociimage.Push(ctx, ref, image, opts...); err != nil {
		return BuiltImage{}, withLoginHint(err, registry)
	}
	digest, err := image.Digest()
	if err != nil {
		return BuiltImage{}, fmt.Errorf("digest of %s: %w", img.Name, err)
	}
	return BuiltImage{Name: img.Name, Reference: ref, Digest: digest.String()}, nil
}

// recordImages records the digests of the images built in the home, where the manager finds
// them to pin the images of real nodes (ociimage.Record).
func (c *Client) recordImages(built []BuiltImage) error {
	if len(built) == 0 {
		return nil
	}
	r := ociimage.Record{}
	for _, b := range built {
		r[b.Name] = b.Digest
	}
	return ociimage.RecordDigests(ociimage.RecordPath(c.Home), r)
}

// imagePrograms returns the set of the newest supported version whose directory holds the
// programs of the images; they are the same in every version.
func (c *Client) imagePrograms() (binaries.Set, error) {
	for _, v := range binaries.Supported {
		set := binaries.Set{Dir: filepath.Join(c.BinRoot, v), Version: v}
		if len(set.Missing(binaries.ImageNames...)) == 0 {
			return set, nil
		}
	}
	newest := binaries.Set{Dir: filepath.Join(c.BinRoot, binaries.Supported[0]), Version: binaries.Supported[0]}
	return binaries.Set{}, fmt.Errorf("%w: the programs of the images (%s) are not built; run: %s --nodes",
		binaries.ErrMissing, strings.Join(binaries.ImageNames, ", "), newest.BuildCommand())
}

// imageNames lists the programs of the images Flotilla builds.
func imageNames() []string {
	names := make([]string, 0, len(ociimage.Flotilla))
	for _, img := range ociimage.Flotilla {
		names = append(names, img.Program)
	}
	return names
}
