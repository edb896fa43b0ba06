package publish

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// bundleImages returns the images b's chart versions run with their default values in a
// cluster of b's minor (helm.Engine.Images: every Pod template and hook) and those every real
// node runs (realnode.Images), each with the digest it has at its mirror path in imageRegistry
// (package ociimage's layout), sorted by name. Images missing there are an error naming each:
// the bundle would name an image it cannot pin.
func bundleImages(ctx context.Context, b bundle.Bundle, imageRegistry string, conn registryconn.Config, opts []remote.Option) ([]bundle.Image, error) {
	cache, err := os.MkdirTemp("", "flotilla-publish-charts-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(cache) }()
	eng := &helm.Engine{ChartCache: filepath.Join(cache, "charts")}
	runBy := map[string]string{}
	for _, p := range b.Packages {
		for _, v := range p.Versions {
			chart := helm.OCIChart(p.Source.Registry, p.Source.Repository, v.Version, v.Digest)
			found, err := eng.Images(ctx, helm.Release{Chart: chart, Registry: conn}, "v"+b.KubernetesMinor+".0")
			if err != nil {
				return nil, fmt.Errorf("finding the images of chart %s %s: %w", p.Source.Repository, v.Version, err)
			}
			for _, image := range found {
				if _, ok := runBy[image]; !ok {
					runBy[image] = "chart " + p.Source.Repository + " " + v.Version
				}
			}
		}
	}
	for _, image := range realnode.Images {
		if _, ok := runBy[image]; !ok {
			runBy[image] = "every real node"
		}
	}
	images := make([]bundle.Image, 0, len(runBy))
	var missing []error
	for _, image := range slices.Sorted(maps.Keys(runBy)) {
		by := runBy[image]
		ref, err := ociimage.MirrorReference(imageRegistry, image)
		if err != nil {
			return nil, fmt.Errorf("image of %s: %w", by, err)
		}
		r, err := name.ParseReference(ref, name.StrictValidation)
		if err != nil {
			return nil, fmt.Errorf("image %s of %s: %w", image, by, err)
		}
		desc, err := remote.Head(r, append(opts, remote.WithContext(ctx))...)
		if err != nil {
			missing = append(missing, fmt.Errorf("image %s, which %s runs, is not in the image registry as %s: push it there ('flotilla image build' pushes Flotilla's own images), or publish without images ('flotilla registry publish --skip-images'): %w",
				image, by, ref, err))
			continue
		}
		images = append(images, bundle.Image{Name: image, Digest: desc.Digest.String()})
	}
	if len(missing) > 0 {
		return nil, errors.Join(missing...)
	}
	return images, nil
}
