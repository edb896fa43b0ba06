package gitops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// MaxSpecFileSize bounds the size of a spec file Specs reads.
const MaxSpecFileSize = 1 << 20

// Snapshot is the head commit of a branch, as pulled.
type Snapshot struct {
	repo   *git.Repository
	commit *object.Commit
}

// Pull returns the head commit of the branch. A repository on this machine (a path) is read in
// place. A URL is fetched into a bare repository at cacheDir, created on first use, so that
// later pulls fetch only new commits; cacheDir belongs to this one Repository. A branch that
// does not exist yet is ErrBranchNotFound.
func (r Repository) Pull(ctx context.Context, cacheDir string) (*Snapshot, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var repo *git.Repository
	var ref plumbing.ReferenceName
	var err error
	if r.local() {
		repo, err = openLocal(r.URL)
		ref = r.branchRef()
	} else {
		repo, err = r.fetch(ctx, cacheDir)
		ref = plumbing.NewRemoteReferenceName(remoteName, r.branch())
	}
	if err != nil {
		return nil, fmt.Errorf("pulling %s: %w", r, err)
	}
	head, err := readReference(repo, ref)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, fmt.Errorf("pulling %s: %w: the branch has no commits yet", r, ErrBranchNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("pulling %s: reading %s: %w", r, ref, err)
	}
	commit, err := repo.CommitObject(head.Hash())
	if err != nil {
		return nil, fmt.Errorf("pulling %s: reading commit %s: %w", r, head.Hash(), err)
	}
	return &Snapshot{repo: repo, commit: commit}, nil
}

// readReference resolves ref, trying again briefly when it fails otherwise than by not
// existing: go-git updates a branch of a repository on this machine by rewriting its ref file
// in place (under a lock readers do not take), so a read at that moment can find it empty.
func readReference(repo *git.Repository, ref plumbing.ReferenceName) (*plumbing.Reference, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var head *plumbing.Reference
		head, err = repo.Reference(ref, true)
		if err == nil || errors.Is(err, plumbing.ErrReferenceNotFound) {
			return head, err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, err
}

// fetch brings the branch of the remote repository into the bare repository at dir, as
// refs/remotes/origin/<branch>. A cache that cannot be opened (a crash in the middle of a
// write) is thrown away and fetched again.
func (r Repository) fetch(ctx context.Context, dir string) (*git.Repository, error) {
	repo, err := openCache(dir, r.URL)
	if err != nil {
		if rmErr := os.RemoveAll(dir); rmErr != nil {
			return nil, fmt.Errorf("%w (and removing the cache: %w)", err, rmErr)
		}
		if repo, err = openCache(dir, r.URL); err != nil {
			return nil, err
		}
	}
	refspec := config.RefSpec(fmt.Sprintf("+%s:%s", r.branchRef(), plumbing.NewRemoteReferenceName(remoteName, r.branch())))
	err = r.withTimeout(ctx, func(ctx context.Context) error {
		return repo.FetchContext(ctx, &git.FetchOptions{
			RemoteName: remoteName,
			RefSpecs:   []config.RefSpec{refspec},
			Auth:       r.Auth,
			Tags:       git.NoTags,
			Force:      true,
		})
	})
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
		return repo, nil
	case isMissingBranch(err):
		return nil, fmt.Errorf("%w: the repository has no branch %s", ErrBranchNotFound, r.branch())
	default:
		return nil, fmt.Errorf("fetching: %w", err)
	}
}

// openCache opens or creates the bare repository at dir, with its remote pointing at url.
func openCache(dir, url string) (*git.Repository, error) {
	repo, err := git.PlainOpen(dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating the cache %s: %w", dir, err)
		}
		repo, err = git.PlainInit(dir, true)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the cache %s: %w", dir, err)
	}
	remote, err := repo.Remote(remoteName)
	switch {
	case err == nil && len(remote.Config().URLs) == 1 && remote.Config().URLs[0] == url:
		return repo, nil
	case err == nil:
		if err := repo.DeleteRemote(remoteName); err != nil {
			return nil, fmt.Errorf("pointing the cache %s at %s: %w", dir, url, err)
		}
	case !errors.Is(err, git.ErrRemoteNotFound):
		return nil, fmt.Errorf("reading the cache %s: %w", dir, err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{url}}); err != nil {
		return nil, fmt.Errorf("pointing the cache %s at %s: %w", dir, url, err)
	}
	return repo, nil
}

// Commit is the full hash of the snapshot's commit.
func (s *Snapshot) Commit() string { return s.commit.Hash.String() }

// SpecFile is a cluster spec file found in the layout.
type SpecFile struct {
	// Path is the file's path in the repository.
	Path string
	// Cluster is the name of the cluster the layout says the file describes: the management
	// cluster's for clusters/<management>/cluster.yaml, else the workload cluster directory's.
	Cluster string
	// Management is true for the management cluster's own spec.
	Management bool
	// Data is the file's content.
	Data []byte

	blob plumbing.Hash
}

// Specs returns the spec files of management cluster management, in path order: its own,
// clusters/<management>/cluster.yaml, and each workload cluster's,
// clusters/<management>/workload-clusters/<name>/cluster.yaml. Other files are not read.
// A repository without the management cluster's directory holds no specs.
func (s *Snapshot) Specs(management string) ([]SpecFile, error) {
	root, err := s.commit.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading the tree of commit %s: %w", s.commit.Hash, err)
	}
	var specs []SpecFile
	dir, err := subtree(root, ManagementDir(management))
	if err != nil || dir == nil {
		return nil, err
	}
	if spec, err := s.specFile(dir, SpecPath(management, management), management, true); err != nil {
		return nil, err
	} else if spec != nil {
		specs = append(specs, *spec)
	}
	workloads, err := subtree(dir, WorkloadClustersDir)
	if err != nil || workloads == nil {
		return specs, err
	}
	for _, entry := range workloads.Entries { // git keeps entries sorted by name
		if entry.Mode == filemode.Dir {
			sub, err := subtree(workloads, entry.Name)
			if err != nil {
				return nil, err
			}
			spec, err := s.specFile(sub, SpecPath(management, entry.Name), entry.Name, false)
			if err != nil {
				return nil, err
			}
			if spec != nil {
				specs = append(specs, *spec)
			}
		}
	}
	return specs, nil
}

// subtree returns the directory p of tree, or nil when there is none.
func subtree(tree *object.Tree, p string) (*object.Tree, error) {
	sub, err := tree.Tree(p)
	if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading directory %s: %w", p, err)
	}
	return sub, nil
}

// specFile reads the spec file of dir, which is at full path p; nil when dir has none.
func (s *Snapshot) specFile(dir *object.Tree, p, cluster string, management bool) (*SpecFile, error) {
	f, err := dir.File(SpecFileName)
	if errors.Is(err, object.ErrFileNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if f.Size > MaxSpecFileSize {
		return nil, fmt.Errorf("%s is %d bytes: a spec file is at most %d", p, f.Size, MaxSpecFileSize)
	}
	reader, err := f.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	defer func() { _ = reader.Close() }()
	data, err := io.ReadAll(reader)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return &SpecFile{Path: p, Cluster: cluster, Management: management, Data: data, blob: f.Hash}, nil
}

// Unchanged reports whether spec has the same content in commit since as in the snapshot.
// It is false when since is empty or not in the repository (history rewritten, a new cache).
func (s *Snapshot) Unchanged(since string, spec SpecFile) bool {
	if since == "" {
		return false
	}
	old, err := s.repo.CommitObject(plumbing.NewHash(since))
	if err != nil {
		return false
	}
	tree, err := old.Tree()
	if err != nil {
		return false
	}
	entry, err := tree.FindEntry(spec.Path)
	if err != nil {
		return false
	}
	return entry.Hash == spec.blob
}
