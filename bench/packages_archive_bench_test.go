package bench

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/packages/bundle/archive"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// BenchmarkPackagesArchive measures the air-gapped install's two commands on the curated catalog
// (both Kubernetes minors), between two of Flotilla's own registries on loopback:
//   - export-s: `flotilla packages export` of the catalog published to the first registry;
//   - import-s: `flotilla packages import` of that archive into the second, below a prefix.
func BenchmarkPackagesArchive(b *testing.B) {
	ctx := context.Background()
	home := b.TempDir()
	c, err := client.New(home, filepath.Join(home, "bin"), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	serve := func(dir string) string {
		h, err := ociregistry.NewHandler(ociregistry.Options{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}
	original, mirror := serve(b.TempDir()), serve(b.TempDir())
	plain := registryconn.Config{PlainHTTP: true}
	if _, err := c.Publish(ctx, client.PublishOptions{Registry: original, Connection: plain}); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(home, "flotilla-packages.tar")
	for b.Loop() {
		start := time.Now()
		if _, err := c.ExportPackages(ctx, client.ExportPackagesOptions{Registry: original, Connection: plain, Path: path}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "export-s")
		start = time.Now()
		if _, err := c.ImportPackages(ctx, archive.ImportOptions{Path: path, Registry: mirror + "/copies", Connection: plain}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "import-s")
	}
}
