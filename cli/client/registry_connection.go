package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"helm.sh/helm/v4/pkg/helmpath"
	"helm.sh/helm/v4/pkg/registry"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"

	"github.com/flotilla-dev/flotilla/pkg/netaddr"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// RegistryConnectionOptions are what a user says about reaching a registry: the flags of
// `flotilla registry publish` and `list`, which RegistryConnection's errors name.
type RegistryConnectionOptions struct {
	// Registry is the registry's host[:port].
	Registry string
	// CAFile is a PEM file of certificate authorities trusted besides the system's.
	CAFile string
	// InsecureSkipTLSVerify does not verify the registry's certificate.
	InsecureSkipTLSVerify bool
	// PlainHTTP speaks plain HTTP. When nil, plain HTTP is spoken to loopback registries, unless
	// CAFile or InsecureSkipTLSVerify says the registry serves TLS.
	PlainHTTP *bool
	// Username and Password are the credentials. Without them, the credentials `helm registry
	// login` stored for the registry are used, then those of `docker login` (Docker's
	// config.json and its credential helpers), as Helm looks them up; without those, none.
	Username, Password string
}

// RegistryConnection returns the connection settings of o, with the stored credentials looked
// up when o has none, so that charts (Helm's client) and bundles (go-containerregistry) are
// pushed and pulled with the same ones. Credentials go over plain HTTP to loopback registries
// only. (What pushes to this home's embedded registry without credentials adds its push
// credential: Client.withPushCredential.)
func RegistryConnection(ctx context.Context, o RegistryConnectionOptions) (registryconn.Config, error) {
	if o.Registry == "" || strings.Contains(o.Registry, "://") || strings.Contains(o.Registry, "/") {
		return registryconn.Config{}, fmt.Errorf("--registry %q: give the host[:port] only, such as %s", o.Registry, DefaultRegistryAddress)
	}
	if (o.Username == "") != (o.Password == "") {
		return registryconn.Config{}, errors.New("--username and --password (or FLOTILLA_REGISTRY_PASSWORD) go together")
	}
	if o.PlainHTTP != nil && *o.PlainHTTP && (o.CAFile != "" || o.InsecureSkipTLSVerify) {
		return registryconn.Config{}, errors.New("--plain-http speaks no TLS: drop --ca-file and --insecure-skip-tls-verify, or --plain-http")
	}
	conn := registryconn.Config{Username: o.Username, Password: o.Password, InsecureSkipTLSVerify: o.InsecureSkipTLSVerify}
	if o.PlainHTTP != nil {
		conn.PlainHTTP = *o.PlainHTTP
	} else {
		conn.PlainHTTP = plainHTTPByDefault(o.Registry, o.CAFile != "" || o.InsecureSkipTLSVerify)
	}
	if o.CAFile != "" {
		data, err := os.ReadFile(o.CAFile) //nolint:gosec // the file the user names
		if err != nil {
			return registryconn.Config{}, fmt.Errorf("reading the registry CA file: %w", err)
		}
		conn.CAData = data
	}
	if conn.Username == "" {
		cred, err := storedCredentials(ctx, o.Registry)
		if err != nil {
			return registryconn.Config{}, err
		}
		conn.Username, conn.Password = cred.Username, cred.Password
	}
	if conn.PlainHTTP && conn.Username != "" && !netaddr.IsLoopback(o.Registry) {
		return registryconn.Config{}, fmt.Errorf("refusing to send the credentials for %s over plain HTTP, which anyone on the way can read: drop --plain-http to use TLS", o.Registry)
	}
	return conn, nil
}

// plainHTTPByDefault says whether a registry the user said nothing about is reached over plain
// HTTP: one on this machine is (Flotilla's embedded registry speaks plain HTTP on loopback),
// unless TLS settings were given for it; every other registry gets TLS.
func plainHTTPByDefault(registry string, tlsSettings bool) bool {
	return netaddr.IsLoopback(registry) && !tlsSettings
}

// storedCredentials looks up the credentials stored for host: Helm's registry config
// ($HELM_REGISTRY_CONFIG, else Helm's config directory), then Docker's.
func storedCredentials(ctx context.Context, host string) (auth.Credential, error) {
	helmConfig := os.Getenv("HELM_REGISTRY_CONFIG")
	if helmConfig == "" {
		helmConfig = helmpath.ConfigPath(registry.CredentialsFileBasename)
	}
	opts := credentials.StoreOptions{DetectDefaultNativeStore: true}
	helmStore, err := credentials.NewStore(helmConfig, opts)
	if err != nil {
		return auth.EmptyCredential, fmt.Errorf("reading Helm's registry credentials %s: %w", helmConfig, err)
	}
	var store credentials.Store = helmStore
	if dockerStore, err := credentials.NewStoreFromDocker(opts); err == nil {
		store = credentials.NewStoreWithFallbacks(helmStore, dockerStore)
	}
	cred, err := store.Get(ctx, host)
	if err != nil {
		return auth.EmptyCredential, fmt.Errorf("looking up the stored credentials for %s: %w", host, err)
	}
	return cred, nil
}

// withLoginHint adds what to do to an error that says the registry wants credentials, as
// go-containerregistry (bundles) and Helm's client (charts) report it.
func withLoginHint(err error, host string) error {
	var ggcrErr *transport.Error
	var orasErr *errcode.ErrorResponse
	if errors.Is(err, auth.ErrBasicCredentialNotFound) ||
		(errors.As(err, &ggcrErr) && ggcrErr.StatusCode == http.StatusUnauthorized) ||
		(errors.As(err, &orasErr) && orasErr.StatusCode == http.StatusUnauthorized) {
		return fmt.Errorf("%w\nThe registry %s wants a user and password: pass --username and --password, or log in with 'helm registry login %s' (Flotilla's embedded registry takes pushes with the push credential it generated into $FLOTILLA_HOME/registry/push-credentials, which the CLI sends to it while it runs at that address: 'flotilla registry start')", err, host, host)
	}
	return err
}
