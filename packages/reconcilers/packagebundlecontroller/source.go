package packagebundlecontroller

import (
	"context"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
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
	// Mirror, when set, is where the bundles are read instead (registryconn.Config.Route).
	Mirror *registryconn.Mirror
}

// BundleSource reads signed bundles from OCI registries. packages/bundle implements it.
type BundleSource interface {
	// List returns the names of the bundles for kubernetesMinor ("1.36") in src, oldest first.
	List(ctx context.Context, src Source, kubernetesMinor string) ([]string, error)
	// Pull reads bundle name from src: its content and signature as a PackageBundle's spec. It
	// does not verify the signature (the packagebundle reconciler does). An error means the
	// registry could not be read.
	Pull(ctx context.Context, src Source, name string) (packagesv1.PackageBundleSpec, error)
}
