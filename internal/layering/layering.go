package layering

import (
	"path"
	"strings"
)

// Module is the module path the folders below belong to.
const Module = "github.com/flotilla-dev/flotilla"

// Layers lists the top-level folders of the tree from the top layer to the bottom one. The top
// layer links everything: the binary (cmd), the tests and benchmarks, the generators (hack) and
// the test support that tests of every folder use (internal).
var Layers = [][]string{
	{"cmd", "test", "bench", "hack", "internal"},
	{"cli"},
	{"manager"},
	{"cluster", "addons", "packages"},
	{"infrastructure"},
	{"pkg", "config", "charts"},
	{"api"},
}

// FolderOf returns the top-level folder of Layers that the package at dir (a slash-separated
// path relative to the module's root) lies in, and false for a folder Layers does not list.
func FolderOf(dir string) (string, bool) {
	top, _, _ := strings.Cut(dir, "/")
	return top, layerOf(top) >= 0
}

// layerOf returns the index in Layers of folder, or -1.
func layerOf(folder string) int {
	for i, layer := range Layers {
		for _, f := range layer {
			if f == folder {
				return i
			}
		}
	}
	return -1
}

// Denied returns the folders a package of folder may not import: those of the layers above it
// and the others of its own layer. The top layer's folders may import anything.
func Denied(folder string) []string {
	own := layerOf(folder)
	if own <= 0 {
		return nil
	}
	var denied []string
	for i := 0; i <= own; i++ {
		for _, f := range Layers[i] {
			if f != folder {
				denied = append(denied, f)
			}
		}
	}
	return denied
}

// Climbs reports whether an import of importPath by a package of folder goes against Layers,
// with the folder it reaches. Imports outside the module, and within folder, never climb.
func Climbs(folder, importPath string) (string, bool) {
	rel, ok := strings.CutPrefix(importPath, Module+"/")
	if !ok {
		return "", false
	}
	to, ok := FolderOf(path.Clean(rel))
	if !ok || to == folder {
		return "", false
	}
	for _, d := range Denied(folder) {
		if d == to {
			return to, true
		}
	}
	return to, false
}
