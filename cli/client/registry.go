package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/netaddr"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

const (
	// DefaultRegistryAddress is where the embedded registry listens by default.
	DefaultRegistryAddress = "127.0.0.1:5001"
	// DefaultRegistryRepository is the repository the curated catalog is published to.
	DefaultRegistryRepository = "flotilla"
	// registryProcess is the embedded registry's name in its process.Keeper.
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

func (c *Client) registryKeeper() process.Keeper {
	return process.InDir(c.RegistryHome())
}

// RegistryOptions say where and how the embedded registry runs: the flags of `flotilla registry
// serve`. RegistryDefaults fills in the address, the data directory (DefaultRegistryDataDir) and,
// on loopback without HTPasswdFile, the push credential's users (PushCredentialPath) and
// AnonymousPull: the CLI pushes, everyone pulls. Validate checks them as the registry will.
type RegistryOptions = ociregistry.Options

// registryServeArgs is the `flotilla registry serve` command line that runs the registry with o.
func registryServeArgs(o RegistryOptions) []string {
	args := []string{"registry", "serve", "--listen", o.Listen, "--dir", o.Dir}
	for _, f := range []struct{ flag, value string }{
		{"--tls-cert-file", o.TLSCertFile},
		{"--tls-key-file", o.TLSKeyFile},
		{"--htpasswd", o.HTPasswdFile},
	} {
		if f.value != "" {
			args = append(args, f.flag, f.value)
		}
	}
	if o.AnonymousPull {
		args = append(args, "--anonymous-pull")
	}
	if len(o.PullOnlyUsers) > 0 {
		args = append(args, "--pull-only-users", strings.Join(o.PullOnlyUsers, ","))
	}
	if o.MaxBlobSize != 0 {
		args = append(args, "--max-blob-size", strconv.FormatInt(o.MaxBlobSize, 10))
	}
	if o.UploadTimeout != 0 {
		args = append(args, "--upload-timeout", o.UploadTimeout.String())
	}
	if o.MaxUploads != 0 {
		args = append(args, "--max-uploads", strconv.Itoa(o.MaxUploads))
	}
	return args
}

// RegistryDefaults fills in the default address and data directory, and makes the paths
// absolute, so that the background process finds them whatever its directory. On loopback
// without HTPasswdFile, the registry takes pushes and deletes from the push credential only
// (generated into the home unless it is there) and pulls from anyone.
func (c *Client) RegistryDefaults(o RegistryOptions) (RegistryOptions, error) {
	if o.Listen == "" {
		o.Listen = DefaultRegistryAddress
	}
	if o.Dir == "" {
		o.Dir = c.DefaultRegistryDataDir()
	}
	if o.HTPasswdFile == "" && netaddr.IsLoopback(o.Listen) {
		if err := c.ensurePushCredential(); err != nil {
			return o, err
		}
		o.HTPasswdFile, o.AnonymousPull = c.pushHTPasswdPath(), true
	}
	for _, p := range []*string{&o.Dir, &o.TLSCertFile, &o.TLSKeyFile, &o.HTPasswdFile} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return o, fmt.Errorf("resolving %s: %w", *p, err)
		}
		*p = abs
	}
	return o, nil
}

// ServeRegistry serves the registry in the foreground until ctx is cancelled (`flotilla registry
// serve`), logging each request to log when it is not nil.
func ServeRegistry(ctx context.Context, o RegistryOptions, log io.Writer) error {
	o.Log = log
	return ociregistry.Serve(ctx, o)
}

// RegistryInfo describes the running embedded registry.
type RegistryInfo struct {
	Address string `json:"address"`
	Dir     string `json:"dir"`
	PID     int    `json:"pid"`
	Log     string `json:"log"`
	// TLS is true when it serves HTTPS, Authenticated when it requires a user and password
	// (for every write, and for reads too unless AnonymousPull).
	TLS           bool `json:"tls"`
	Authenticated bool `json:"authenticated"`
	AnonymousPull bool `json:"anonymousPull"`
	// Started is false when the registry already ran with these options.
	Started bool `json:"started"`
}

// EnsureRegistry runs the embedded registry in the background, as a supervised process that
// outlives the CLI (`flotilla registry serve`), and waits until it answers. A registry already
// running with the same options is left alone; one running with other options is restarted
// with these.
func (c *Client) EnsureRegistry(ctx context.Context, o RegistryOptions) (RegistryInfo, error) {
	o, err := c.RegistryDefaults(o)
	if err != nil {
		return RegistryInfo{}, err
	}
	if err := o.Validate(); err != nil {
		return RegistryInfo{}, err
	}
	keeper := c.registryKeeper()
	spec := process.Spec{Name: registryProcess, Path: c.Executable, Args: registryServeArgs(o), Ports: []string{o.Listen}}
	p, err := ensureLocked(ctx, keeper, spec)
	if err != nil {
		return RegistryInfo{}, fmt.Errorf("starting the registry: %w", err)
	}
	if err := c.EnsureSupervisor(ctx); err != nil {
		return RegistryInfo{}, err
	}
	info := RegistryInfo{
		Address: o.Listen, Dir: o.Dir, PID: p.PID, Log: keeper.LogPath(registryProcess),
		TLS: o.TLSCertFile != "", Authenticated: o.HTPasswdFile != "", AnonymousPull: o.AnonymousPull, Started: !p.Adopted,
	}
	err = waitProcess(ctx, keeper, registryProcess, "the registry", 30*time.Second, 100*time.Millisecond, func(ctx context.Context) error {
		return RegistryReady(ctx, o.Listen, info.TLS)
	})
	if err != nil {
		return info, err
	}
	// Another program answering on the address while ours fails to bind it would pass for it:
	// ours must keep running for a moment.
	err = poll(ctx, 50*time.Millisecond, 300*time.Millisecond, func(context.Context) (bool, error) {
		if _, ok := keeper.Running(registryProcess); !ok {
			return false, fmt.Errorf("the registry exited (is another program listening on %s?); its log:\n%s", o.Listen, keeper.LogTail(registryProcess, 20))
		}
		return false, nil
	}, func() error { return nil })
	if err != nil {
		return info, err
	}
	info.PID, _ = keeper.Running(registryProcess)
	return info, nil
}

// RegistryStatus returns the running embedded registry, or false when none runs.
func (c *Client) RegistryStatus() (RegistryInfo, bool) {
	keeper := c.registryKeeper()
	p, recorded := keeper.Inspect(registryProcess)
	if !recorded || p.PID == 0 {
		return RegistryInfo{}, false
	}
	// The command line is the record of where and how it serves.
	info := registryServing(p.Argv)
	info.PID, info.Log = p.PID, keeper.LogPath(registryProcess)
	return info, true
}

// registryServing reads where and how a `flotilla registry serve` command line serves: its
// Address, Dir, TLS and Authenticated.
func registryServing(argv []string) RegistryInfo {
	var info RegistryInfo
	for i := 0; i+1 < len(argv); i++ {
		switch argv[i] {
		case "--listen":
			info.Address = argv[i+1]
		case "--dir":
			info.Dir = argv[i+1]
		case "--tls-cert-file":
			info.TLS = true
		case "--htpasswd":
			info.Authenticated = true
		}
	}
	info.AnonymousPull = slices.Contains(argv, "--anonymous-pull")
	return info
}

// StopRegistry stops the embedded registry if it runs; the supervisor does not start it again,
// and stops itself when no cluster is left to supervise either.
func (c *Client) StopRegistry(ctx context.Context) error {
	if err := stopLocked(ctx, c.registryKeeper(), registryProcess); err != nil {
		return fmt.Errorf("stopping the registry: %w", err)
	}
	return c.stopIdleSupervisor(ctx)
}

// RegistryReady returns nil when an OCI registry answers at address (host:port), over HTTPS
// when useTLS is set. An answer that asks for credentials counts: the registry runs. The probe
// sends no credentials and reads nothing but the status, so over TLS it does not verify the
// certificate, which may be issued for names other than the listen address.
func RegistryReady(ctx context.Context, address string, useTLS bool) error {
	scheme, client := "http", http.DefaultClient
	if useTLS {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // a liveness probe without credentials, see above
		scheme, client = "https", &http.Client{Transport: t}
		defer t.CloseIdleConnections()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+address+"/v2/", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("registry at %s: %w", address, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusUnauthorized {
		return fmt.Errorf("registry at %s: GET /v2/ answered %s", address, resp.Status)
	}
	return nil
}

// DefaultRegistryHTPasswdPath is the htpasswd file SetRegistryUser writes by default.
func (c *Client) DefaultRegistryHTPasswdPath() string {
	return filepath.Join(c.RegistryHome(), "htpasswd")
}

// SetRegistryUser sets user's password in the htpasswd file (DefaultRegistryHTPasswdPath when
// empty), as a bcrypt hash, and returns the file's path. A running registry reads the file
// when it starts: restart it to apply the change.
func (c *Client) SetRegistryUser(file, user, password string) (string, error) {
	if file == "" {
		file = c.DefaultRegistryHTPasswdPath()
	}
	if err := ociregistry.SetHTPasswdUser(file, user, password); err != nil {
		return "", err
	}
	return file, nil
}
