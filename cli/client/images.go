package client

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

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
// binaries build --nodes`) and pushes each to its mirror path in the registry (see package
// ociimage), where the containerd of real nodes finds it.
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
		image, err := ociimage.Build(img, set.Path(img.Program), "")
		if err != nil {
			return built, err
		}
		ref, err := ociimage.MirrorReference(o.Registry, img.Name)
		if err != nil {
			return built, err
		}
		if err := ociimage.Push(ctx, ref, image, opts...); err != nil {
			return built, withLoginHint(err, o.Registry)
		}
		digest, err := image.Digest()
		if err != nil {
			return built, fmt.Errorf("digest of %s: %w", img.Name, err)
		}
		built = append(built, BuiltImage{Name: img.Name, Reference: ref, Digest: digest.String()})
	}
	return built, nil
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
