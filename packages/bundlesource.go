package packages

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/packages/reconcilers/packagebundlecontroller"
)

// BundleSource reads signed bundles from OCI registries with packages/bundle.
type BundleSource struct{}

var _ packagebundlecontroller.BundleSource = BundleSource{}

func registryOf(src packagebundlecontroller.Source) bundle.Registry {
	return bundle.Registry{Username: src.Username, Password: src.Password, CAData: src.CAData, PlainHTTP: src.PlainHTTP}
}

// List returns the bundle names for kubernetesMinor in src, oldest first.
func (BundleSource) List(ctx context.Context, src packagebundlecontroller.Source, kubernetesMinor string) ([]string, error) {
	opts, err := bundle.RemoteOptions(registryOf(src))
	if err != nil {
		return nil, err
	}
	return bundle.List(ctx, src.Registry, src.Repository, kubernetesMinor, opts...)
}

// Pull reads bundle name and verifies its signature with key. A bundle that is unsigned, badly
// signed, malformed or named differently from its tag is returned as invalid.
func (BundleSource) Pull(ctx context.Context, src packagebundlecontroller.Source, name string, key *ecdsa.PublicKey) (packagebundlecontroller.Pulled, error) {
	opts, err := bundle.RemoteOptions(registryOf(src))
	if err != nil {
		return packagebundlecontroller.Pulled{}, err
	}
	signed, err := bundle.Pull(ctx, src.Registry+"/"+src.Repository+":"+name, opts...)
	if errors.Is(err, bundle.ErrNameMismatch) {
		minor, build, _ := bundle.ParseName(name)
		return packagebundlecontroller.Pulled{
			Spec:    packagesv1.PackageBundleSpec{KubernetesMinor: minor, Build: build},
			Invalid: err,
		}, nil
	}
	if err != nil {
		return packagebundlecontroller.Pulled{}, err
	}
	pulled := packagebundlecontroller.Pulled{Spec: bundleSpec(signed.Bundle)}
	switch {
	case key == nil:
		pulled.Invalid = errors.New("no public key to verify it with")
	default:
		pulled.Invalid = bundle.Verify(signed, key)
	}
	if pulled.Invalid == nil {
		if err := signed.Bundle.Validate(); err != nil {
			pulled.Invalid = fmt.Errorf("malformed bundle: %w", err)
		}
	}
	return pulled, nil
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
	return spec
}
