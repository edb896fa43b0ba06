package archive

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla-dev/flotilla/internal/charttest"
)

// FuzzImportArchive feeds arbitrary files to Import as archives (the seeds, in
// testdata/fuzz/FuzzImportArchive and added below, are an archive of the curated catalog as
// exported, tars of layout files and malformed ones). Nothing may panic, and whatever the file,
// Import pushes nothing but what the catalog's bundle, signed for the key, names: a file that
// does not verify pushes nothing at all.
func FuzzImportArchive(f *testing.F) {
	original, stop := charttest.StartRegistry()
	f.Cleanup(stop)
	key, res := publishCatalog(f, original, "")
	published := res.Bundles[0].Name
	path := filepath.Join(f.TempDir(), "catalog.tar")
	exported, err := Export(context.Background(), ExportOptions{Registry: original, Repository: "flotilla", KubernetesMinors: []string{"1.36"},
		Connection: plain, SkipImages: true, Path: path})
	if err != nil {
		f.Fatal(err)
	}
	named, namedRepos := map[string]bool{}, map[string]bool{}
	for _, a := range exported {
		named[a.Repository+"@"+a.Digest] = true
		namedRepos[a.Repository] = true
	}
	valid, err := os.ReadFile(path) //nolint:gosec // written above
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	// One mirror for every input (what verifies may only push what the bundle names, so it
	// holds nothing else), and one file, rewritten: executions run one after another.
	mirror, stopMirror := charttest.StartRegistry()
	f.Cleanup(stopMirror)
	reg, err := name.NewRegistry(mirror)
	if err != nil {
		f.Fatal(err)
	}
	file := filepath.Join(f.TempDir(), "archive.tar")
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		pushed, err := Import(ctx, ImportOptions{Path: file, Registry: mirror, Connection: plain, PublicKey: &key.PublicKey})
		for _, a := range pushed {
			if !named[a.Repository+"@"+a.Digest] {
				t.Fatalf("pushed %s %s@%s, which bundle %s does not name", a.Kind, a.Repository, a.Digest, published)
			}
		}
		if err == nil || len(pushed) > 0 {
			return
		}
		repos, err := remote.Catalog(ctx, reg)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range repos {
			if !namedRepos[r] {
				t.Fatalf("the mirror holds repository %s, which bundle %s does not name", r, published)
			}
		}
	})
}
