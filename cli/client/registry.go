package client

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"


	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/packages/bundle/publish"
	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

const (
	// DefaultRegistryAddress is where the embedded registry listens by default.
	DefaultRegistryAddress = "127.0.0.1:5001"
	// DefaultRegistryRepository is the repository the curated catalog is published to.
	DefaultRegistryRepository = "flotilla"
	// registryProcess is the embedded registry's name in its supervisor.
	registryProcess = "registry"
)

// RegistryHome is where the embedded registry and the signing key live: <home>/registry.
func (c *Client) RegistryHome() string { return registryHome(c.Home) }

func registryHome(home string) string { return filepath.Join(home, "registry") }

// DefaultRegistryDataDir is the embedded registry's default data directory.
func (c *Client) DefaultRegistryDataDir() string { return filepath.Join(c.RegistryHome(), "data") }

// DefaultSigningKeyPath is the bundle signing key publish uses by default.
func (c *Client) DefaultSigningKeyPath() string {
	return filepath.Join(c.RegistryHome(), "signing-key.pem")
}

func (c *Client) registrySupervisor() process.Supervisor {
	return process.Supervisor{RunDir: filepath.Join(c.RegistryHome(), "run"), LogDir: filepath.Join(c.RegistryHome(), "logs")}
}

// RegistryOptions say where the embedded registry runs.
type RegistryOptions struct {
	// Listen is the address, DefaultRegistryAddress when empty.
	Listen string
	// Dir keeps its blobs and manifests, DefaultRegistryDataDir when empty.
	Dir string
}

func (c *Client) registryDefaults(o RegistryOptions) RegistryOptions {
	if o.Listen == "" {
		o.Listen = DefaultRegistryAddress
	}
	if o.Dir == "" {
		o.Dir = c.DefaultRegistryDataDir()
	}
	return o
}

// RegistryInfo describes the running embedded registry.
type RegistryInfo struct {
	Address string `json:"address"`
	Dir     string `json:"dir"`
	PID     int    `json:"pid"`
	Log     string `json:"log"`
	// Started is false when the registry already ran with these options.
	Started bool `json:"started"`
}

// EnsureRegistry runs the embedded registry in the background, as a supervised process that
// outlives the CLI (`flotilla registry serve`), and waits until it answers. A registry already
// running with the same options is left alone; one running with other options is restarted
// with these.
func (c *Client) EnsureRegistry(ctx context.Context, o RegistryOptions) (RegistryInfo, error) {
	o = c.registryDefaults(o)
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return RegistryInfo{}, err
	}
	sup := c.registrySupervisor()
	spec := process.Spec{
		Name:  registryProcess,
		Path:  c.Executable,
		Args:  []string{"registry", "serve", "--listen", o.Listen, "--dir", dir},
		Ports: []string{o.Listen},
	}
	p, err := ensureLocked(ctx, sup, spec)
	if err != nil {
		return RegistryInfo{}, fmt.Errorf("starting the registry: %w", err)
	}
	if err := c.EnsureSupervisor(ctx); err != nil {
		return RegistryInfo{}, err
	}
	info := RegistryInfo{Address: o.Listen, Dir: dir, PID: p.PID, Log: sup.LogPath(registryProcess), Started: !p.Adopted}
	err = waitProcess(ctx, sup, registryProcess, "the registry", 30*time.Second, 100*time.Millisecond, func(ctx context.Context) error {
		return RegistryReady(ctx, o.Listen)
	})
	if err != nil {
		return info, err
	}
	// Another program answering on the address while ours fails to bind it would pass for it:
	// ours must still run a moment later.
	select {
	case <-ctx.Done():
	case <-time.After(300 * time.Millisecond):
	}
	if _, ok := sup.Running(registryProcess); !ok {
		return info, fmt.Errorf("the registry exited (is another program listening on %s?); its log:\n%s", o.Listen, sup.LogTail(registryProcess, 20))
	}
	info.PID, _ = sup.Running(registryProcess)
	return info, nil
}

// RegistryStatus returns the running embedded registry, or false when none runs.
func (c *Client) RegistryStatus() (RegistryInfo, bool) {
	sup := c.registrySupervisor()
	p, recorded := sup.Inspect(registryProcess)
	if !recorded || p.PID == 0 {
		return RegistryInfo{}, false
	}
	// The command line is the record of where it serves.
	address, dir := registryFlags(p.Argv)
	return RegistryInfo{PID: p.PID, Log: sup.LogPath(registryProcess), Address: address, Dir: dir}, true
}

// registryFlags returns the --listen and --dir of a `flotilla registry serve` command line.
func registryFlags(argv []string) (address, dir string) {
	for i := 0; i+1 < len(argv); i++ {
		switch argv[i] {
		case "--listen":
			address = argv[i+1]
		case "--dir":
			dir = argv[i+1]
		}
	}
	return address, dir
}

// StopRegistry stops the embedded registry if it runs; the supervisor does not start it again.
func (c *Client) StopRegistry(ctx context.Context) error {
	if err := stopLocked(ctx, c.registrySupervisor(), registryProcess); err != nil {
		return fmt.Errorf("stopping the registry: %w", err)
	}
	return nil
}

// RegistryReady returns nil when an OCI registry answers at address (host:port, plain HTTP).
func RegistryReady(ctx context.Context, address string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+address+"/v2/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("registry at %s: %w", address, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("registry at %s: GET /v2/ answered %s", address, resp.Status)
	}
	return nil
}

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
	Connection bundle.Registry
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
	res, err := publish.Publish(ctx, publish.Options{
		ChartsDir:        o.ChartsDir,
		Registry:         o.Registry,
		Repository:       o.Repository,
		KubernetesMinors: o.KubernetesMinors,
		Key:              key,
		Connection:       o.Connection,
	})
	out := PublishResult{Result: res, Registry: o.Registry, Repository: o.Repository, PublicKey: pubPath, KeyCreated: created}
	if err != nil {
		return out, err
	}
	return out, nil
}

// LoadOrCreateSigningKey reads the PEM private key at path. When it does not exist and create
// is set, it generates a P-256 key there (0600). Either way it (re)writes the public key next to
// it, <path without .pem>.pub.pem, when that file is missing or holds another key, and returns
// that path and whether the key was generated.
func LoadOrCreateSigningKey(path string, create bool) (*ecdsa.PrivateKey, string, bool, error) {
	pubPath := strings.TrimSuffix(path, ".pem") + ".pub.pem"
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
