package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// covers reports whether the package pattern p ("./x" or "./x/...") holds the package in dir
// (relative to the module root, with forward slashes).
func covers(p, dir string) bool {
	if rest, ok := strings.CutSuffix(p, "/..."); ok {
		rest = strings.TrimPrefix(rest, "./")
		return dir == rest || strings.HasPrefix(dir, rest+"/")
	}
	return strings.TrimPrefix(p, "./") == dir
}

// TestEveryPackageWithRBACMarkersBelongsToExactlyOneIdentity: a package whose markers no identity
// reads would lose its rules (and its component would be refused at run time); one read by two
// identities would give a rule to an identity that does not run it.
func TestEveryPackageWithRBACMarkersBelongsToExactlyOneIdentity(t *testing.T) {
	root := filepath.Join("..", "..")
	marked := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (rel == "hack" || rel == "test" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path) //nolint:gosec // a file of this module
		if err != nil {
			return err
		}
		if strings.Contains(string(data), "+kubebuilder:rbac:") {
			marked[filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(marked) == 0 {
		t.Fatal("found no package with RBAC markers")
	}
	for dir := range marked {
		var owners []string
		for _, id := range identities {
			for _, p := range id.packages {
				if covers(p, dir) {
					owners = append(owners, id.name)
					break
				}
			}
		}
		if len(owners) != 1 {
			t.Errorf("package ./%s has RBAC markers and belongs to identities %v: add it to exactly one in main.go", dir, owners)
		}
	}
}
