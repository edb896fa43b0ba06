package charttest

import (
	"io"
	"log"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	"helm.sh/helm/v4/pkg/registry"
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
	// A credentials file of its own: the test does not read or write the user's.
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "creds.json")))
	must(t, err)
	res, err := client.Push(Package(t, c), repository+"/"+c.Name+":"+c.Version)
	must(t, err)
	return res.Manifest.Digest
}
