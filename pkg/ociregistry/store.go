package ociregistry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"sync"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
)

// reference is what refs.json records for one tag or digest of a repository.
type reference struct {
	Digest    string `json:"digest"`
	MediaType string `json:"mediaType"`
}

// refsFile is the content of refs.json.
type refsFile struct {
	Repositories map[string]map[string]reference `json:"repositories"`
}

// store records manifests and references under dir.
type store struct {
	dir  string
	mu   sync.Mutex
	refs refsFile
}

func openStore(dir string) (*store, error) {
	s := &store{dir: dir, refs: refsFile{Repositories: map[string]map[string]reference{}}}
	data, err := os.ReadFile(s.refsPath())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("reading the registry's references: %w", err)
	}
	if err := json.Unmarshal(data, &s.refs); err != nil {
		return nil, fmt.Errorf("reading %s: %w", s.refsPath(), err)
	}
	if s.refs.Repositories == nil {
		s.refs.Repositories = map[string]map[string]reference{}
	}
	return s, nil
}

func (s *store) refsPath() string { return filepath.Join(s.dir, "refs.json") }

func (s *store) manifestPath(digest string) (string, error) {
	h, err := v1.NewHash(digest)
	if err != nil {
		return "", fmt.Errorf("manifest digest %q: %w", digest, err)
	}
	return filepath.Join(s.dir, "manifests", h.Algorithm, h.Hex), nil
}

// putManifest writes the manifest body and records target (a tag or a digest) and the body's
// digest as references to it. undo restores the references as they were. The caller holds s.mu.
func (s *store) putManifest(repo, target, mediaType string, body []byte) (undo func() error, err error) {
	sum := sha256.Sum256(body)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	path, err := s.manifestPath(digest)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(path, body); err != nil {
		return nil, err
	}
	ref := reference{Digest: digest, MediaType: mediaType}
	return s.update(repo, map[string]*reference{digest: &ref, target: &ref})
}

// deleteRef forgets one reference, as go-containerregistry does. The caller holds s.mu.
func (s *store) deleteRef(repo, target string) (undo func() error, err error) {
	return s.update(repo, map[string]*reference{target: nil})
}

// update sets (or, for nil, deletes) references of repo and saves refs.json; on failure nothing
// changed. undo puts the previous references back. The caller holds s.mu.
func (s *store) update(repo string, changes map[string]*reference) (undo func() error, err error) {
	prev := map[string]*reference{}
	for target := range changes {
		if old, ok := s.refs.Repositories[repo][target]; ok {
			prev[target] = &old
		} else {
			prev[target] = nil
		}
	}
	apply := func(set map[string]*reference) {
		refs := s.refs.Repositories[repo]
		if refs == nil {
			refs = map[string]reference{}
			s.refs.Repositories[repo] = refs
		}
		for target, ref := range set {
			if ref == nil {
				delete(refs, target)
			} else {
				refs[target] = *ref
			}
		}
		if len(refs) == 0 {
			delete(s.refs.Repositories, repo)
		}
	}
	apply(changes)
	if err := s.save(); err != nil {
		apply(prev)
		return nil, err
	}
	return func() error {
		apply(prev)
		return s.save()
	}, nil
}

// save writes refs.json atomically; the caller holds s.mu.
func (s *store) save() error {
	data, err := json.MarshalIndent(s.refs, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the registry's references: %w", err)
	}
	return atomicfile.Write(s.refsPath(), data)
}

// replay puts every recorded reference into inner: image manifests (and anything else that is
// not an index) first, then indexes, so that an index finds the manifests it lists.
func (s *store) replay(inner http.Handler) error {
	type entry struct {
		repo, target string
		ref          reference
	}
	var entries []entry
	for repo, refs := range s.refs.Repositories {
		for target, ref := range refs {
			entries = append(entries, entry{repo, target, ref})
		}
	}
	sort.SliceStable(entries, func(i, j int) bool {
		ii, ji := types.MediaType(entries[i].ref.MediaType).IsIndex(), types.MediaType(entries[j].ref.MediaType).IsIndex()
		if ii != ji {
			return !ii
		}
		if entries[i].repo != entries[j].repo {
			return entries[i].repo < entries[j].repo
		}
		return entries[i].target < entries[j].target
	})
	for _, e := range entries {
		path, err := s.manifestPath(e.ref.Digest)
		if err != nil {
			return err
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("restoring manifest %s:%s: %w", e.repo, e.target, err)
		}
		if err := replayRequest(inner, e.repo, e.target, e.ref.MediaType, body); err != nil {
			return err
		}
	}
	return nil
}

// diskBlobs keeps blobs in <dir>/<algorithm>/<hex>. Uploads (uploads.go) write a blob to a file
// of their own and commit it here once its digest is checked, so a blob file always has the
// digest it is named after.
type diskBlobs struct{ dir string }

var (
	_ ggcrregistry.BlobStatHandler   = (*diskBlobs)(nil)
	_ ggcrregistry.BlobDeleteHandler = (*diskBlobs)(nil)
)

func (d *diskBlobs) path(h v1.Hash) string { return filepath.Join(d.dir, h.Algorithm, h.Hex) }

func (d *diskBlobs) Stat(_ context.Context, _ string, h v1.Hash) (int64, error) {
	fi, err := os.Stat(d.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, ggcrregistry.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (d *diskBlobs) Get(_ context.Context, _ string, h v1.Hash) (io.ReadCloser, error) {
	f, err := os.Open(d.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ggcrregistry.ErrNotFound
	}
	return f, err
}

// commit moves the file at path, whose content has digest h, into the store. A blob already
// stored is replaced by the same bytes.
func (d *diskBlobs) commit(h v1.Hash, path string) error {
	if err := os.MkdirAll(filepath.Join(d.dir, h.Algorithm), 0o700); err != nil {
		return fmt.Errorf("storing blob %s: %w", h, err)
	}
	if err := os.Rename(path, d.path(h)); err != nil {
		return fmt.Errorf("storing blob %s: %w", h, err)
	}
	return nil
}

func (d *diskBlobs) Delete(_ context.Context, _ string, h v1.Hash) error {
	err := os.Remove(d.path(h))
	if errors.Is(err, fs.ErrNotExist) {
		return ggcrregistry.ErrNotFound
	}
	return err
}
