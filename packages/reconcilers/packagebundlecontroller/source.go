package packagebundlecontroller

import (
	"context"
	"crypto/ecdsa"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// Source is a registry repository of bundles and how to reach it.
type Source struct {
	packagesv1.BundleSource
	// PlainHTTP reaches the registry over HTTP (loopback registries).
	PlainHTTP bool
	// Username and Password authenticate to the registry when set.
	Username, Password string
	// CAData are extra PEM CA certificates the registry's TLS certificate may chain to.
	CAData []byte
}

// Pulled is a bundle as read from a registry.
type Pulled struct {
	// Spec is the bundle's content.
	Spec packagesv1.PackageBundleSpec
	// Invalid says why the bundle must not be used (unsigned, bad signature, no key); nil when
	// its signature verified.
	Invalid error
}

// BundleSource reads signed bundles from OCI registries. packages/bundle implements it.
type BundleSource interface {
	// List returns the names of the bundles for kubernetesMinor ("1.36") in src, oldest first.
	List(ctx context.Context, src Source, kubernetesMinor string) ([]string, error)
	// Pull reads bundle name from src and verifies its signature with key (nil: no key is
	// configured, so the bundle is invalid). An error means the registry could not be read.
	Pull(ctx context.Context, src Source, name string, key *ecdsa.PublicKey) (Pulled, error)
}
