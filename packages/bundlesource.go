package packages

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/packages/reconcilers/packagebundle"
	"github.com/flotilla-dev/flotilla/packages/reconcilers/packagebundlecontroller"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// BundleSource reads signed bundles from OCI registries with packages/bundle.
type BundleSource struct{}

var _ packagebundlecontroller.BundleSource = BundleSource{}

func registryOf(src packagebundlecontroller.Source) registryconn.Config {
	return registryconn.Config{Username: src.Username, Password: src.Password, CAData: src.CAData, PlainHTTP: src.PlainHTTP, Mirror: src.Mirror}
}

// route is where src's repository is read and how: the mirror's when src has one.
func route(src packagebundlecontroller.Source) (registry, repository string, opts []remote.Option, err error) {
	registry, repository, conn := registryOf(src).Route(src.Registry, src.Repository)
	opts, err = bundle.RemoteOptions(conn)
	return registry, repository, opts, err
}

// List returns the bundle names for kubernetesMinor in src, oldest first.
func (BundleSource) List(ctx context.Context, src packagebundlecontroller.Source, kubernetesMinor string) ([]string, error) {
	registry, repository, opts, err := route(src)
	if err != nil {
		return nil, err
	}
	return bundle.List(ctx, registry, repository, kubernetesMinor, opts...)
}

// Pull reads bundle name as a PackageBundle spec, signature included. A bundle whose content
// names another bundle than its tag comes back without content and signature: it cannot verify.
func (BundleSource) Pull(ctx context.Context, src packagebundlecontroller.Source, name string) (packagesv1.PackageBundleSpec, error) {
	registry, repository, opts, err := route(src)
	if err != nil {
		return packagesv1.PackageBundleSpec{}, err
	}
	signed, err := bundle.Pull(ctx, registry+"/"+repository+":"+name, opts...)
	if errors.Is(err, bundle.ErrNameMismatch) {
		minor, build, _ := bundle.ParseName(name)
		return packagesv1.PackageBundleSpec{KubernetesMinor: minor, Build: build}, nil
	}
	if err != nil {
		return packagesv1.PackageBundleSpec{}, err
	}
	spec := bundleSpec(signed.Bundle)
	spec.Signature = signed.Signature
	return spec, nil
}

// BundleVerifier verifies PackageBundles with packages/bundle.
type BundleVerifier struct{}

var _ packagebundle.Verifier = BundleVerifier{}

// Verify checks b's signature over the canonical content rebuilt from its name and spec, then
// the bundle's shape.
func (BundleVerifier) Verify(b *packagesv1.PackageBundle, key *ecdsa.PublicKey) error {
	content := bundleOf(b)
	err := bundle.Verify(bundle.Signed{Bundle: content, Signature: b.Spec.Signature}, key)
	if err != nil && len(content.Packages) == 0 {
		// An empty package list travels as null or []: the API server keeps neither apart.
		content.Packages = []bundle.Package{}
		err = bundle.Verify(bundle.Signed{Bundle: content, Signature: b.Spec.Signature}, key)
	}
	if err != nil {
		return err
	}
	if err := content.Validate(); err != nil {
		return fmt.Errorf("malformed bundle: %w", err)
	}
	return nil
}

// bundleSpec is a bundle's content as a PackageBundle's spec.
func bundleSpec(b bundle.Bundle) packagesv1.PackageBundleSpec {
	spec := packagesv1.PackageBundleSpec{KubernetesMinor: b.KubernetesMinor, Build: b.Build}
	for _, p := range b.Packages {
		bp := packagesv1.BundlePackage{
			Name:        p.Name,
			Description: p.Description,
			Source:      packagesv1.PackageSource{Registry: p.Source.Registry, Repository: p.Source.Repository},
		}
		for _, v := range p.Versions {
			bp.Versions = append(bp.Versions, packagesv1.PackageVersion{
				Version: v.Version, Digest: v.Digest, Schema: v.Schema, Dependencies: v.Dependencies,
			})
		}
		spec.Packages = append(spec.Packages, bp)
	}
	for _, i := range b.Images {
		spec.Images = append(spec.Images, packagesv1.BundleImage{Name: i.Name, Digest: i.Digest})
	}
	return spec
}

// bundleOf rebuilds the signed content of a PackageBundle: the inverse of bundleSpec.
func bundleOf(b *packagesv1.PackageBundle) bundle.Bundle {
	out := bundle.Bundle{Name: b.Name, KubernetesMinor: b.Spec.KubernetesMinor, Build: b.Spec.Build}
	for _, p := range b.Spec.Packages {
		bp := bundle.Package{
			Name:        p.Name,
			Description: p.Description,
			Source:      bundle.Source{Registry: p.Source.Registry, Repository: p.Source.Repository},
			Versions:    []bundle.Version{},
		}
		for _, v := range p.Versions {
			bp.Versions = append(bp.Versions, bundle.Version{
				Version: v.Version, Digest: v.Digest, Schema: v.Schema, Dependencies: v.Dependencies,
			})
		}
		out.Packages = append(out.Packages, bp)
	}
	for _, i := range b.Spec.Images {
		out.Images = append(out.Images, bundle.Image{Name: i.Name, Digest: i.Digest})
	}
	return out
}
