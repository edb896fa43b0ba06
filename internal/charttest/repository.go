package charttest

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	repo "helm.sh/helm/v4/pkg/repo/v1"
)

// Repository is a classic chart repository: an index.yaml and an archive <name>-<version>.tgz
// per chart.
type Repository struct {
	Charts []Chart
	// WrongDigests gives every index entry a digest that matches no archive.
	WrongDigests bool
}

// Dir writes r into a new directory and returns it.
func (r Repository) Dir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	index := repo.NewIndexFile()
	for _, c := range r.Charts {
		ch, data := load(t, c)
		name := ch.Metadata.Name + "-" + ch.Metadata.Version + ".tgz"
		must(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
		sum := sha256.Sum256(data)
		digest := hex.EncodeToString(sum[:])
		if r.WrongDigests {
			digest = strings.Repeat("0", len(digest))
		}
		meta := &chart.Metadata{APIVersion: "v2", Name: ch.Metadata.Name, Version: ch.Metadata.Version}
		must(t, index.MustAdd(meta, name, "", digest))
	}
	must(t, index.WriteFile(filepath.Join(dir, "index.yaml"), 0o600))
	return dir
}

// Serve serves r over HTTP until the test ends and returns its URL.
func (r Repository) Serve(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(r.Dir(t))))
	t.Cleanup(srv.Close)
	return srv.URL
}
