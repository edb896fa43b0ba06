// Package charts embeds Flotilla's curated sample charts (the directories next to this file),
// so that `flotilla registry publish` can publish them from any directory.
package charts

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// FS holds the curated charts, one directory per chart ("all:" keeps _helpers.tpl and
// .helmignore).
//
//go:embed all:hello-flotilla all:flotilla-greeter all:hello-stack
var FS embed.FS

// WriteTo writes the curated charts into dir, one directory per chart, for tools that read
// charts from disk.
func WriteTo(dir string) error {
	return fs.WalkDir(FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		data, err := FS.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			return fmt.Errorf("writing the curated charts: %w", err)
		}
		return nil
	})
}
