package charttest

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
)

// StartRegistry starts an in-process OCI registry (plain HTTP, loopback, quiet) and returns its
// host:port and a function that stops it. It is meant for TestMain; Push pushes charts to it.
func StartRegistry() (host string, stop func()) {
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	return strings.TrimPrefix(srv.URL, "http://"), srv.Close
}

// Push pushes c as a Helm chart to <repository>/<name>:<version> over plain HTTP, where
// repository is host:port/path, and returns the manifest digest.
func Push(t testing.TB, repository string, c Chart) string {
	t.Helper()
	return push(t, repository, c, registry.ClientOptPlainHTTP())
}

// push pushes c with a Helm registry client of opts and a credentials file of its own: the test
// does not read or write the user's.
func push(t testing.TB, repository string, c Chart, opts ...registry.ClientOption) string {
	t.Helper()
	opts = append(opts, registry.ClientOptWriter(io.Discard), registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "creds.json")))
	client, err := registry.NewClient(opts...)
	must(t, err)
	res, err := client.Push(Package(t, c), repository+"/"+c.Name+":"+c.Version)
	must(t, err)
	return res.Manifest.Digest
}

// SecureRegistry is Flotilla's registry (pkg/ociregistry) as it serves other machines: over TLS,
// to users with a password. It listens on loopback.
type SecureRegistry struct {
	// Host is its host:port.
	Host string
	// CAPEM is the PEM certificate its TLS certificate verifies with.
	CAPEM []byte
	// Username and Password are the credentials of a user who may push and pull.
	Username, Password string
	// Puller and PullerPassword are the credentials of a user who may only pull
	// (ociregistry.Options.PullOnlyUsers), as those a mirror gives real nodes.
	Puller, PullerPassword string

	srv *httptest.Server
	dir string
}

// StartSecureRegistry starts a SecureRegistry with its data in a new temporary directory. It is
// meant for TestMain; Close stops it and deletes the data.
func StartSecureRegistry() (*SecureRegistry, error) {
	dir, err := os.MkdirTemp("", "charttest-registry-")
	if err != nil {
		return nil, err
	}
	r := &SecureRegistry{Username: "charttest", Password: "charttest-password", Puller: "charttest-puller", PullerPassword: "charttest-puller-password", dir: dir}
	htpasswd := filepath.Join(dir, "htpasswd")
	for user, password := range map[string]string{r.Username: r.Password, r.Puller: r.PullerPassword} {
		if err := ociregistry.SetHTPasswdUser(htpasswd, user, password); err != nil {
			return nil, err
		}
	}
	h, err := ociregistry.NewHandler(ociregistry.Options{Dir: filepath.Join(dir, "data"), HTPasswdFile: htpasswd, PullOnlyUsers: []string{r.Puller}})
	if err != nil {
		return nil, fmt.Errorf("starting the registry: %w", err)
	}
	r.srv = httptest.NewTLSServer(h)
	r.Host = strings.TrimPrefix(r.srv.URL, "https://")
	r.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	return r, nil
}

// Close stops the registry and deletes its data.
func (r *SecureRegistry) Close() {
	r.srv.Close()
	_ = os.RemoveAll(r.dir)
}

// Push pushes c as a Helm chart to <repository>/<name>:<version> as the registry's user, where
// repository is host:port/path, and returns the manifest digest.
func (r *SecureRegistry) Push(t testing.TB, repository string, c Chart) string {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(r.CAPEM)
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	return push(t, repository, c, registry.ClientOptHTTPClient(httpClient), registry.ClientOptBasicAuth(r.Username, r.Password))
}
