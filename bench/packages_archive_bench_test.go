package bench

import (
	"context"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/packages/bundle/archive"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// BenchmarkPackagesArchive measures the air-gapped install's two commands on the curated catalog
// (both Kubernetes minors) and Flotilla's images (`flotilla image build`, from the programs of
// the binary cache), between Flotilla's own registries on loopback:
//   - export-s: `flotilla packages export` of the catalog and images in the first registry;
//   - import-s: `flotilla packages import` of that archive into a second, empty one, below a
//     prefix;
//   - archive-MiB: the archive's size.
func BenchmarkPackagesArchive(b *testing.B) {
	ctx := context.Background()
	home := b.TempDir()
	c, err := client.New(home, binaries.DefaultRoot(), io.Discard)
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
	original := serve(b.TempDir())
	plain := registryconn.Config{PlainHTTP: true}
	if _, err := c.BuildImages(ctx, client.BuildImagesOptions{Registry: original, Connection: plain}); err != nil {
		b.Fatal(err)
	}
	if _, err := c.Publish(ctx, client.PublishOptions{Registry: original, Connection: plain, ImageRegistry: original}); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(home, "flotilla-packages.tar")
	for b.Loop() {
		start := time.Now()
		if _, err := c.ExportPackages(ctx, client.ExportPackagesOptions{Registry: original, Connection: plain, Path: path}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "export-s")
		info, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(info.Size())/(1<<20), "archive-MiB")
		mirror := serve(b.TempDir()) // empty: every blob is pushed
		start = time.Now()
		if _, err := c.ImportPackages(ctx, archive.ImportOptions{Path: path, Registry: mirror + "/copies", Connection: plain}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "import-s")
	}
}
