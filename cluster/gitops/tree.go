package gitops

import (
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// files is the content of a commit as a flat list of entries by path: blobs, symlinks and
// submodules, never trees. Commits are built from it without a worktree, so the CLI can commit
// to a bare repository, to a clone held in memory, or to a branch that is not checked out.
type files struct {
	store   storer.EncodedObjectStorer
	entries map[string]object.TreeEntry
}

// readFiles lists the entries of tree; a nil tree is an empty commit (a new branch).
func readFiles(store storer.EncodedObjectStorer, tree *object.Tree) (*files, error) {
	f := &files{store: store, entries: map[string]object.TreeEntry{}}
	if tree == nil {
		return f, nil
	}
	walker := object.NewTreeWalker(tree, true, nil)
	defer walker.Close()
	for {
		name, entry, err := walker.Next()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading tree %s: %w", tree.Hash, err)
		}
		if entry.Mode != filemode.Dir {
			f.entries[name] = entry
		}
	}
}

// has reports whether the file at p exists.
func (f *files) has(p string) bool {
	_, ok := f.entries[p]
	return ok
}

// write stores data as a regular file at p.
func (f *files) write(p string, data []byte) error {
	obj := f.store.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	hash, err := f.store.SetEncodedObject(obj)
	if err != nil {
		return fmt.Errorf("storing %s: %w", p, err)
	}
	f.entries[p] = object.TreeEntry{Name: path.Base(p), Mode: filemode.Regular, Hash: hash}
	return nil
}

// removeAll removes the file or directory dir with everything under it.
func (f *files) removeAll(dir string) {
	for p := range f.entries {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			delete(f.entries, p)
		}
	}
}

// storeTree stores the trees of the entries and returns the root tree's hash. Equal contents
// give equal hashes, which is how an edit that changes nothing is told apart.
func (f *files) storeTree() (plumbing.Hash, error) {
	root := &dirNode{children: map[string]*dirNode{}}
	for p, entry := range f.entries {
		dir := root
		parts := strings.Split(p, "/")
		for _, part := range parts[:len(parts)-1] {
			child, ok := dir.children[part]
			if !ok {
				child = &dirNode{children: map[string]*dirNode{}}
				dir.children[part] = child
			}
			dir = child
		}
		entry.Name = parts[len(parts)-1]
		dir.files = append(dir.files, entry)
	}
	return root.store(f.store)
}

// dirNode is a directory while trees are built.
type dirNode struct {
	children map[string]*dirNode
	files    []object.TreeEntry
}

// store stores the directory's tree, its subdirectories' first.
func (d *dirNode) store(s storer.EncodedObjectStorer) (plumbing.Hash, error) {
	entries := append([]object.TreeEntry(nil), d.files...)
	for name, child := range d.children {
		hash, err := child.store(s)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: hash})
	}
	// Git orders tree entries by name, comparing a directory's name as if it ended in "/".
	sortKey := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return sortKey(entries[i]) < sortKey(entries[j]) })
	obj := s.NewEncodedObject()
	if err := (&object.Tree{Entries: entries}).Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encoding a tree: %w", err)
	}
	hash, err := s.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("storing a tree: %w", err)
	}
	return hash, nil
}
