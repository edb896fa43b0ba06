package client

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/packages/bundle/publish"
	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// PublishOptions configure Publish.
type PublishOptions struct {
	// Registry is the registry's host[:port], DefaultRegistryAddress when empty.
	Registry string
	// Repository is DefaultRegistryRepository when empty.
	Repository string
	// ChartsDir holds the charts; empty publishes the curated catalog built into flotilla.
	ChartsDir string
	// KubernetesMinors get a bundle each (publish.DefaultKubernetesMinors when empty).
	KubernetesMinors []string
	// SigningKey is the PEM private key file; DefaultSigningKeyPath when empty. The default key
	// is generated on first use; a key named explicitly must exist.
	SigningKey string
	// Connection says how to reach the registry. Set PlainHTTP for loopback registries (the
	// command does so unless told otherwise).
	Connection registryconn.Config
	// ImageRegistry, when set, holds the images the charts and real nodes run (mirror layout),
	// and the bundles record them pinned by their digests there (publish.Options.ImageRegistry).
	ImageRegistry string
}

// PublishResult is what Publish pushed, and the key that verifies it.
type PublishResult struct {
	publish.Result `json:",inline"`
	// Registry and Repository are where the bundles are: configure package controllers with
	// them.
	Registry   string `json:"registry"`
	Repository string `json:"repository"`
	// PublicKey is the PEM file of the public key that verifies the bundles.
	PublicKey string `json:"publicKey"`
	// KeyCreated is true when this run generated the signing key.
	KeyCreated bool `json:"keyCreated"`
}

// Publish pushes the charts and a signed bundle per Kubernetes minor (see package publish).
func (c *Client) Publish(ctx context.Context, o PublishOptions) (PublishResult, error) {
	if o.Registry == "" {
		o.Registry = DefaultRegistryAddress
	}
	if o.Repository == "" {
		o.Repository = DefaultRegistryRepository
	}
	keyPath := o.SigningKey
	if keyPath == "" {
		keyPath = c.DefaultSigningKeyPath()
	}
	key, pubPath, created, err := LoadOrCreateSigningKey(keyPath, o.SigningKey == "")
	if err != nil {
		return PublishResult{}, err
	}
	if o.Connection, err = c.withPushCredential(o.Connection, o.Registry); err != nil {
		return PublishResult{}, err
	}
	res, err := publish.Publish(ctx, publish.Options{
		ChartsDir:        o.ChartsDir,
		Registry:         o.Registry,
		Repository:       o.Repository,
		KubernetesMinors: o.KubernetesMinors,
		Key:              key,
		Connection:       o.Connection,
		ImageRegistry:    o.ImageRegistry,
	})
	out := PublishResult{Result: res, Registry: o.Registry, Repository: o.Repository, PublicKey: pubPath, KeyCreated: created}
	if err != nil {
		return out, withLoginHint(err, o.Registry)
	}
	return out, nil
}

// LoadOrCreateSigningKey reads the PEM private key at path. When it does not exist and create
// is set, it generates a P-256 key there (0600). Either way it (re)writes the public key next to
// it, <path without .pem>.pub.pem, when that file is missing or holds another key, and returns
// that path and whether the key was generated.
func LoadOrCreateSigningKey(path string, create bool) (*ecdsa.PrivateKey, string, bool, error) {
	pubPath := publicKeyPath(path)
	var key *ecdsa.PrivateKey
	created := false
	data, err := os.ReadFile(path) //nolint:gosec // the key file the user names or Flotilla's own
	switch {
	case errors.Is(err, fs.ErrNotExist) && create:
		if key, err = bundle.GenerateKey(); err != nil {
			return nil, "", false, err
		}
		pemData, err := bundle.EncodePrivateKey(key)
		if err != nil {
			return nil, "", false, err
		}
		if err := atomicfile.Write(path, pemData); err != nil {
			return nil, "", false, err
		}
		created = true
	case err != nil:
		return nil, "", false, fmt.Errorf("reading the signing key: %w", err)
	default:
		if key, err = bundle.ParsePrivateKey(data); err != nil {
			return nil, "", false, fmt.Errorf("%s: %w", path, err)
		}
	}
	pubPEM, err := bundle.EncodePublicKey(&key.PublicKey)
	if err != nil {
		return nil, "", false, err
	}
	if existing, err := os.ReadFile(pubPath); err != nil || string(existing) != string(pubPEM) { //nolint:gosec // next to the key
		if err := atomicfile.Write(pubPath, pubPEM); err != nil {
			return nil, "", false, err
		}
	}
	return key, pubPath, created, nil
}

// ListBundlesOptions configure ListBundles.
type ListBundlesOptions struct {
	// Registry and Repository are where the bundles are (DefaultRegistryAddress and
	// DefaultRegistryRepository when empty).
	Registry, Repository string
	// KubernetesMinors are the minors whose bundles to list (publish.DefaultKubernetesMinors
	// when empty).
	KubernetesMinors []string
	// PublicKey is the PEM file of the key that verifies the bundles: the public key of
	// DefaultSigningKeyPath when empty.
	PublicKey string
	// Connection says how to reach the registry (RegistryConnection).
	Connection registryconn.Config
}

// BundleListing is one bundle found by ListBundles.
type BundleListing struct {
	Name            string   `json:"name"`
	KubernetesMinor string   `json:"kubernetesMinor"`
	Digest          string   `json:"digest"`
	Packages        []string `json:"packages"`
	// Verified is "ok", or why the bundle must not be used.
	Verified string `json:"verified"`
}

// PublicKey reads the PEM public key file path that verifies bundles; the public key of
// DefaultSigningKeyPath when empty.
func (c *Client) PublicKey(path string) (*ecdsa.PublicKey, error) {
	keyPath := cmp.Or(path, publicKeyPath(c.DefaultSigningKeyPath()))
	keyPEM, err := os.ReadFile(keyPath) //nolint:gosec // the key file the user names or Flotilla's own
	if err != nil {
		return nil, fmt.Errorf("reading the public key that verifies the bundles: %w (pass --public-key)", err)
	}
	pub, err := bundle.ParsePublicKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	return pub, nil
}

// ListBundles lists the bundles of each Kubernetes minor in the repository, oldest first, with
// the packages each lists, and checks each signature with the public key. A bundle that does
// not pull or verify is listed with the reason in Verified.
func (c *Client) ListBundles(ctx context.Context, o ListBundlesOptions) ([]BundleListing, error) {
	o.Registry = cmp.Or(o.Registry, DefaultRegistryAddress)
	o.Repository = cmp.Or(o.Repository, DefaultRegistryRepository)
	if len(o.KubernetesMinors) == 0 {
		o.KubernetesMinors = publish.DefaultKubernetesMinors
	}
	pub, err := c.PublicKey(o.PublicKey)
	if err != nil {
		return nil, err
	}
	remoteOpts, err := bundle.RemoteOptions(o.Connection)
	if err != nil {
		return nil, err
	}
	var listing []BundleListing
	for _, minor := range o.KubernetesMinors {
		names, err := bundle.List(ctx, o.Registry, o.Repository, minor, remoteOpts...)
		if err != nil {
			return nil, withLoginHint(err, o.Registry)
		}
		for _, n := range names {
			l := BundleListing{Name: n, KubernetesMinor: minor, Verified: "ok"}
			s, err := bundle.Pull(ctx, o.Registry+"/"+o.Repository+":"+n, remoteOpts...)
			if err == nil {
				err = bundle.Verify(s, pub)
			}
			if err != nil {
				l.Verified = err.Error()
			}
			l.Digest = s.Digest
			for _, p := range s.Bundle.Packages {
				if len(p.Versions) > 0 {
					l.Packages = append(l.Packages, p.Name+"@"+p.Versions[0].Version)
				}
			}
			listing = append(listing, l)
		}
	}
	return listing, nil
}

// publicKeyPath is where the public key of the private key at path is written.
func publicKeyPath(path string) string { return strings.TrimSuffix(path, ".pem") + ".pub.pem" }
