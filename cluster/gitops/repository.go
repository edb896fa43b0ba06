package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage"
	"github.com/go-git/go-git/v5/storage/memory"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// Repository is a branch of a Git repository that holds cluster specs.
type Repository struct {
	// URL is the repository: a URL go-git fetches from and pushes to (https://, http://,
	// ssh://, git@host:path, file://), or the absolute path of a repository on this machine,
	// bare or not, which is read and written in place. As with git, a file:// URL goes through
	// git's transport (git-upload-pack and git-receive-pack on the PATH); a path does not.
	URL string

	// Branch is the branch; flotillav1.DefaultGitOpsBranch when empty.
	Branch string

	// Auth authenticates to a URL. Nil means none, or go-git's default for SSH URLs: the SSH
	// agent, with ~/.ssh/known_hosts.
	Auth transport.AuthMethod

	// Author signs the commits; DefaultAuthor when its name is empty.
	Author object.Signature

	// Timeout bounds each exchange with the Git server of a URL (a clone, a fetch, a push);
	// DefaultTimeout when zero.
	Timeout time.Duration
}

// DefaultTimeout bounds each exchange with a Git server when Repository.Timeout is zero.
const DefaultTimeout = time.Minute

// ErrTimeout is wrapped by the error of an exchange with a Git server that did not finish within
// Repository.Timeout.
var ErrTimeout = errors.New("the Git server did not answer in time")

// withTimeout runs exchange, one exchange with the Git server, within the repository's Timeout.
// Its error wraps ErrTimeout when the timeout, not ctx, ended it.
func (r Repository) withTimeout(ctx context.Context, exchange func(context.Context) error) error {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := exchange(tctx)
	if err != nil && ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: no answer within %s", ErrTimeout, timeout)
	}
	return err
}

// DefaultAuthor signs the commits of a Repository that names no author.
var DefaultAuthor = object.Signature{Name: "Flotilla", Email: "flotilla@flotilla.dev"}

// remoteName is the name of the one remote of the clones this package makes.
const remoteName = "origin"

// maxAttempts bounds how often a commit is redone when the branch moved under it.
const maxAttempts = 3

// errBranchMoved: someone else updated the branch between reading and updating it.
var errBranchMoved = errors.New("the branch moved while committing")

// ErrBranchNotFound is returned by Pull when the branch does not exist yet (or the repository
// has no commit at all).
var ErrBranchNotFound = errors.New("branch not found")

// Validate checks the URL and the branch name.
func (r Repository) Validate() error {
	if err := ValidateURL(r.URL); err != nil {
		return err
	}
	return ValidateBranch(r.branch())
}

// ValidateURL checks that url is a Git URL or an absolute path.
func ValidateURL(url string) error {
	switch {
	case url == "":
		return errors.New("the repository is empty: set a URL or an absolute path")
	case isPath(url) && !filepath.IsAbs(url):
		return fmt.Errorf("repository %q is a relative path: use an absolute path (the management cluster resolves it, not the shell)", url)
	case !isPath(url):
		if _, err := transport.NewEndpoint(url); err != nil {
			return fmt.Errorf("repository %q is not a Git URL: %w", url, err)
		}
	}
	return nil
}

// ValidateBranch checks that branch is a name git accepts for a branch.
func ValidateBranch(branch string) error {
	if err := plumbing.NewBranchReferenceName(branch).Validate(); err != nil {
		return fmt.Errorf("branch %q is not a valid branch name", branch)
	}
	return nil
}

// isPath reports whether url names a repository on this machine by path rather than by URL.
func isPath(url string) bool {
	if strings.Contains(url, "://") {
		return false
	}
	// scp-like SSH: [user@]host:path, with no slash before the colon.
	if colon := strings.Index(url, ":"); colon > 0 && !strings.Contains(url[:colon], "/") {
		return false
	}
	return true
}

func (r Repository) local() bool { return isPath(r.URL) }

func (r Repository) branch() string {
	if r.Branch == "" {
		return flotillav1.DefaultGitOpsBranch
	}
	return r.Branch
}

func (r Repository) branchRef() plumbing.ReferenceName {
	return plumbing.NewBranchReferenceName(r.branch())
}

// String names the branch of the repository for messages: "/srv/fleet.git (branch main)". A
// password written into the URL is left out.
func (r Repository) String() string {
	shown := r.URL
	if u, err := url.Parse(r.URL); err == nil && u.User != nil {
		shown = u.Redacted()
	}
	return fmt.Sprintf("%s (branch %s)", shown, r.branch())
}

// Result says what a commit did.
type Result struct {
	// Commit is the branch's head afterwards: the new commit, or the head that already held
	// the content. Empty when the branch does not exist and there was nothing to write.
	Commit string
	// Changed is true when a commit was made; false when the branch already held the content.
	Changed bool
}

// edit changes the files of the branch's head and returns the commit message.
type edit func(f *files) (message string, err error)

// PutCluster writes spec, the spec file of cluster name managed by management, to its place in
// the layout (SpecPath) and commits it, unless the branch already holds exactly that. The
// branch is created when it does not exist.
func (r Repository) PutCluster(ctx context.Context, management, name string, spec []byte) (Result, error) {
	p := SpecPath(management, name)
	return r.commit(ctx, func(f *files) (string, error) {
		verb := "Add"
		if f.has(p) {
			verb = "Update"
		}
		if err := f.write(p, spec); err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %s\n\nWritten by flotilla to %s.", verb, describe(management, name), p), nil
	})
}

// RemoveCluster removes the directory of workload cluster name managed by management, with
// everything in it, and commits that, unless it is already gone. For the management cluster
// itself only its spec file goes: its directory still holds its workload clusters'.
func (r Repository) RemoveCluster(ctx context.Context, management, name string) (Result, error) {
	target := ClusterDir(management, name)
	if name == management {
		target = SpecPath(management, name)
	}
	return r.commit(ctx, func(f *files) (string, error) {
		f.removeAll(target)
		return fmt.Sprintf("Remove %s\n\nRemoved by flotilla from %s.", describe(management, name), target), nil
	})
}

// describe names a cluster in commit messages.
func describe(management, name string) string {
	if name == management {
		return "management cluster " + name
	}
	return fmt.Sprintf("workload cluster %s of management cluster %s", name, management)
}

// commit applies e to the head of the branch and commits the result, redoing it when the
// branch moved under it.
func (r Repository) commit(ctx context.Context, e edit) (Result, error) {
	if err := r.Validate(); err != nil {
		return Result{}, err
	}
	for attempt := 1; ; attempt++ {
		res, err := r.commitOnce(ctx, e)
		if errors.Is(err, errBranchMoved) && attempt < maxAttempts {
			continue
		}
		if err != nil {
			return Result{}, fmt.Errorf("committing to %s: %w", r, err)
		}
		return res, nil
	}
}

// commitOnce reads the branch's head, applies e and, when that changed anything, commits and
// publishes the result: by updating the branch of a local repository (and its checkout, when
// the branch is checked out), or by pushing from a clone in memory.
func (r Repository) commitOnce(ctx context.Context, e edit) (Result, error) {
	repo, err := r.openForCommit(ctx)
	if err != nil {
		return Result{}, err
	}
	head, err := repo.Storer.Reference(r.branchRef())
	if err != nil && !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return Result{}, fmt.Errorf("reading branch %s: %w", r.branch(), err)
	}
	var parent *object.Commit
	var tree *object.Tree
	if head != nil {
		if parent, err = repo.CommitObject(head.Hash()); err != nil {
			return Result{}, fmt.Errorf("reading commit %s: %w", head.Hash(), err)
		}
		if tree, err = parent.Tree(); err != nil {
			return Result{}, fmt.Errorf("reading the tree of commit %s: %w", head.Hash(), err)
		}
	}
	f, err := readFiles(repo.Storer, tree)
	if err != nil {
		return Result{}, err
	}
	before := hashes(f.entries)
	message, err := e(f)
	if err != nil {
		return Result{}, err
	}
	changed := changedPaths(before, f.entries)
	if len(changed) == 0 {
		res := Result{}
		if head != nil {
			res.Commit = head.Hash().String()
		}
		return res, nil
	}
	treeHash, err := f.storeTree()
	if err != nil {
		return Result{}, err
	}
	hash, err := r.storeCommit(repo, message, treeHash, parent)
	if err != nil {
		return Result{}, err
	}
	newHead := plumbing.NewHashReference(r.branchRef(), hash)
	if r.local() {
		err = r.updateLocal(repo, newHead, head, changed)
	} else {
		err = r.push(ctx, repo, newHead)
	}
	if err != nil {
		return Result{}, err
	}
	return Result{Commit: hash.String(), Changed: true}, nil
}

// openForCommit opens a local repository in place, or clones the branch of a remote one into
// memory (an empty repository, or one without the branch, gives an empty clone to start the
// branch in).
func (r Repository) openForCommit(ctx context.Context) (*git.Repository, error) {
	if r.local() {
		return openLocal(r.URL)
	}
	var repo *git.Repository
	err := r.withTimeout(ctx, func(ctx context.Context) error {
		var err error
		repo, err = git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{
			URL:           r.URL,
			Auth:          r.Auth,
			RemoteName:    remoteName,
			ReferenceName: r.branchRef(),
			SingleBranch:  true,
			Tags:          git.NoTags,
		})
		return err
	})
	if err == nil {
		return repo, nil
	}
	if !isMissingBranch(err) {
		return nil, fmt.Errorf("cloning: %w", err)
	}
	repo, err = git.Init(memory.NewStorage(), nil)
	if err != nil {
		return nil, fmt.Errorf("starting an empty clone: %w", err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{r.URL}}); err != nil {
		return nil, fmt.Errorf("starting an empty clone: %w", err)
	}
	return repo, nil
}

// openLocal opens the repository at path, bare or not.
func openLocal(path string) (*git.Repository, error) {
	repo, err := git.PlainOpen(path)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, fmt.Errorf("no Git repository at %s: create one with `git init --bare %s`", path, path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	return repo, nil
}

// isMissingBranch reports whether a clone or fetch failed because the repository is empty or
// does not have the branch.
func isMissingBranch(err error) bool {
	return errors.Is(err, transport.ErrEmptyRemoteRepository) ||
		errors.Is(err, git.NoMatchingRefSpecError{}) ||
		errors.Is(err, plumbing.ErrReferenceNotFound)
}

// storeCommit stores a commit of tree on top of parent (nil for the first commit of a branch).
func (r Repository) storeCommit(repo *git.Repository, message string, tree plumbing.Hash, parent *object.Commit) (plumbing.Hash, error) {
	sig := r.Author
	if sig.Name == "" {
		sig = DefaultAuthor
	}
	sig.When = time.Now()
	c := &object.Commit{Author: sig, Committer: sig, Message: message, TreeHash: tree}
	if parent != nil {
		c.ParentHashes = []plumbing.Hash{parent.Hash}
	}
	obj := repo.Storer.NewEncodedObject()
	if err := c.Encode(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("encoding the commit: %w", err)
	}
	hash, err := repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("storing the commit: %w", err)
	}
	return hash, nil
}

// updateLocal moves the branch of a local repository from old (nil: it did not exist) to
// newHead. When the branch is checked out, the changed paths of the checkout follow, and the
// rest of it (the user's own changes) is left alone; changed paths with uncommitted changes
// stop the update before anything moves.
func (r Repository) updateLocal(repo *git.Repository, newHead, old *plumbing.Reference, changed []string) error {
	wt, err := checkedOut(repo, r.branchRef())
	if err != nil {
		return err
	}
	if wt != nil {
		if err := checkClean(wt, changed, r.URL); err != nil {
			return err
		}
	}
	err = repo.Storer.CheckAndSetReference(newHead, old)
	if errors.Is(err, storage.ErrReferenceHasChanged) {
		return errBranchMoved
	}
	if err != nil {
		return fmt.Errorf("updating branch %s: %w", r.branch(), err)
	}
	if wt == nil {
		return nil
	}
	// A hard reset limited to the changed paths puts them in the index and the working tree
	// as the new commit has them.
	if err := wt.Reset(&git.ResetOptions{Commit: newHead.Hash(), Mode: git.HardReset, Files: changed}); err != nil {
		return fmt.Errorf("updating the checkout of %s in %s: %w", r.branch(), r.URL, err)
	}
	return nil
}

// checkedOut returns the worktree of repo when it has one with branch checked out, else nil.
func checkedOut(repo *git.Repository, branch plumbing.ReferenceName) (*git.Worktree, error) {
	wt, err := repo.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("opening the worktree: %w", err)
	}
	head, err := repo.Storer.Reference(plumbing.HEAD)
	if err != nil {
		return nil, fmt.Errorf("reading HEAD: %w", err)
	}
	if head.Type() != plumbing.SymbolicReference || head.Target() != branch {
		return nil, nil
	}
	return wt, nil
}

// checkClean fails when one of paths has uncommitted changes in the checkout.
func checkClean(wt *git.Worktree, paths []string, where string) error {
	status, err := wt.Status()
	if err != nil {
		return fmt.Errorf("reading the status of %s: %w", where, err)
	}
	var dirty []string
	for _, p := range paths {
		if s, ok := status[p]; ok && (s.Worktree != git.Unmodified || s.Staging != git.Unmodified) {
			dirty = append(dirty, p)
		}
	}
	if len(dirty) > 0 {
		return fmt.Errorf("%s has uncommitted changes to %s: commit or discard them first", where, strings.Join(dirty, ", "))
	}
	return nil
}

// push publishes newHead from a clone in memory to the remote's branch. A rejected push
// (the branch moved) is errBranchMoved.
func (r Repository) push(ctx context.Context, repo *git.Repository, newHead *plumbing.Reference) error {
	if err := repo.Storer.SetReference(newHead); err != nil {
		return fmt.Errorf("updating branch %s in the clone: %w", r.branch(), err)
	}
	refspec := config.RefSpec(fmt.Sprintf("%s:%s", r.branchRef(), r.branchRef()))
	err := r.withTimeout(ctx, func(ctx context.Context) error {
		return repo.PushContext(ctx, &git.PushOptions{RemoteName: remoteName, RefSpecs: []config.RefSpec{refspec}, Auth: r.Auth})
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, git.ErrForceNeeded), strings.Contains(err.Error(), "non-fast-forward"):
		return errBranchMoved
	default:
		return fmt.Errorf("pushing: %w", err)
	}
}

// hashes copies entries' hashes by path.
func hashes(entries map[string]object.TreeEntry) map[string]plumbing.Hash {
	out := make(map[string]plumbing.Hash, len(entries))
	for p, e := range entries {
		out[p] = e.Hash
	}
	return out
}

// changedPaths lists, sorted, the paths added, changed or removed between before and after.
func changedPaths(before map[string]plumbing.Hash, after map[string]object.TreeEntry) []string {
	var changed []string
	for p, e := range after {
		if h, ok := before[p]; !ok || h != e.Hash {
			changed = append(changed, p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			changed = append(changed, p)
		}
	}
	slices.Sort(changed)
	return changed
}
