package gitops

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"
)

// The tests work on real repositories in t.TempDir(): bare and not, written in place (a path)
// and through git's transport (a file:// URL, which needs git on the PATH, as in production).

const missing = "<missing>"

var testAuthor = object.Signature{Name: "Test", Email: "test@example.com"}

// initRepo creates a repository at dir whose branch main is checked out (non-bare) or exists
// (bare), with one commit holding README.md.
func initRepo(t *testing.T, g Gomega, bare bool) string {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}, Bare: bare,
	})
	g.Expect(err).NotTo(HaveOccurred())
	if bare {
		_, err := Repository{URL: dir, Author: testAuthor}.commit(context.Background(), func(f *files) (string, error) {
			return "Initial commit", f.write("README.md", []byte("fleet\n"))
		})
		g.Expect(err).NotTo(HaveOccurred())
		return dir
	}
	g.Expect(os.WriteFile(filepath.Join(dir, "README.md"), []byte("fleet\n"), 0o600)).To(Succeed())
	wt, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = wt.Add("README.md")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = wt.Commit("Initial commit", &git.CommitOptions{Author: &testAuthor})
	g.Expect(err).NotTo(HaveOccurred())
	return dir
}

// fileAt returns the content of p at the head of branch main of the repository at dir, or
// "<missing>" when it does not exist there.
func fileAt(g Gomega, dir, p string) string {
	commit := headCommit(g, dir)
	tree, err := commit.Tree()
	g.Expect(err).NotTo(HaveOccurred())
	f, err := tree.File(p)
	if err == object.ErrFileNotFound {
		return missing
	}
	g.Expect(err).NotTo(HaveOccurred())
	content, err := f.Contents()
	g.Expect(err).NotTo(HaveOccurred())
	return content
}

func headCommit(g Gomega, dir string) *object.Commit {
	repo, err := git.PlainOpen(dir)
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("main"), true)
	g.Expect(err).NotTo(HaveOccurred())
	commit, err := repo.CommitObject(ref.Hash())
	g.Expect(err).NotTo(HaveOccurred())
	return commit
}

func TestPutClusterCommitsOnceAndSaysWhatChanged(t *testing.T) {
	tests := []struct {
		name string
		// repo returns the Repository.URL to commit to and the directory to inspect.
		repo func(t *testing.T, g Gomega) (url, dir string)
	}{
		{
			name: "a bare repository given by path",
			repo: func(t *testing.T, g Gomega) (string, string) { d := initRepo(t, g, true); return d, d },
		},
		{
			name: "a repository with main checked out, given by path",
			repo: func(t *testing.T, g Gomega) (string, string) { d := initRepo(t, g, false); return d, d },
		},
		{
			name: "a bare repository reached through a file:// URL",
			repo: func(t *testing.T, g Gomega) (string, string) { d := initRepo(t, g, true); return "file://" + d, d },
		},
		{
			name: "an empty bare repository reached through a file:// URL",
			repo: func(t *testing.T, g Gomega) (string, string) {
				d := t.TempDir()
				_, err := git.PlainInit(d, true)
				g.Expect(err).NotTo(HaveOccurred())
				return "file://" + d, d
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			url, dir := tt.repo(t, g)
			r := Repository{URL: url, Author: testAuthor}

			first, err := r.PutCluster(ctx, "mgmt", "w1", []byte("spec: 1\n"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(first.Changed).To(BeTrue())
			g.Expect(headCommit(g, dir).Hash.String()).To(Equal(first.Commit))
			g.Expect(headCommit(g, dir).Message).To(HavePrefix("Add workload cluster w1 of management cluster mgmt\n"))
			g.Expect(headCommit(g, dir).Author.Name).To(Equal("Test"))
			g.Expect(fileAt(g, dir, "clusters/mgmt/workload-clusters/w1/cluster.yaml")).To(Equal("spec: 1\n"))

			again, err := r.PutCluster(ctx, "mgmt", "w1", []byte("spec: 1\n"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again).To(Equal(Result{Commit: first.Commit, Changed: false}), "the same spec makes no commit")
			g.Expect(headCommit(g, dir).Hash.String()).To(Equal(first.Commit))

			update, err := r.PutCluster(ctx, "mgmt", "w1", []byte("spec: 2\n"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(update.Changed).To(BeTrue())
			head := headCommit(g, dir)
			g.Expect(head.Message).To(HavePrefix("Update workload cluster w1 of management cluster mgmt\n"))
			g.Expect(head.ParentHashes).To(Equal([]plumbing.Hash{plumbing.NewHash(first.Commit)}))
			g.Expect(fileAt(g, dir, "clusters/mgmt/workload-clusters/w1/cluster.yaml")).To(Equal("spec: 2\n"))

			mgmt, err := r.PutCluster(ctx, "mgmt", "mgmt", []byte("management: true\n"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(mgmt.Changed).To(BeTrue())
			g.Expect(headCommit(g, dir).Message).To(HavePrefix("Add management cluster mgmt\n"))
			g.Expect(fileAt(g, dir, "clusters/mgmt/cluster.yaml")).To(Equal("management: true\n"))
		})
	}
}

func TestRemoveClusterRemovesOnlyThatClustersDirectory(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := initRepo(t, g, true)
	r := Repository{URL: dir, Author: testAuthor}
	for _, name := range []string{"mgmt", "w1", "w2"} {
		_, err := r.PutCluster(ctx, "mgmt", name, []byte(name+"\n"))
		g.Expect(err).NotTo(HaveOccurred())
	}
	// A file of the user's in the cluster's directory goes with it.
	_, err := r.commit(ctx, func(f *files) (string, error) {
		return "Notes", f.write("clusters/mgmt/workload-clusters/w1/NOTES.md", []byte("notes\n"))
	})
	g.Expect(err).NotTo(HaveOccurred())

	res, err := r.RemoveCluster(ctx, "mgmt", "w1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeTrue())
	g.Expect(headCommit(g, dir).Message).To(HavePrefix("Remove workload cluster w1 of management cluster mgmt\n"))
	g.Expect(fileAt(g, dir, "clusters/mgmt/workload-clusters/w1/cluster.yaml")).To(Equal(missing))
	g.Expect(fileAt(g, dir, "clusters/mgmt/workload-clusters/w1/NOTES.md")).To(Equal(missing))
	g.Expect(fileAt(g, dir, "clusters/mgmt/workload-clusters/w2/cluster.yaml")).To(Equal("w2\n"))
	g.Expect(fileAt(g, dir, "clusters/mgmt/cluster.yaml")).To(Equal("mgmt\n"))
	g.Expect(fileAt(g, dir, "README.md")).To(Equal("fleet\n"))

	again, err := r.RemoveCluster(ctx, "mgmt", "w1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(Result{Commit: res.Commit, Changed: false}))

	mgmt, err := r.RemoveCluster(ctx, "mgmt", "mgmt")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(mgmt.Changed).To(BeTrue())
	g.Expect(fileAt(g, dir, "clusters/mgmt/cluster.yaml")).To(Equal(missing), "the management cluster's spec is removed")
	g.Expect(fileAt(g, dir, "clusters/mgmt/workload-clusters/w2/cluster.yaml")).To(Equal("w2\n"), "its workload clusters' specs stay")
}

func TestCommittingToACheckedOutBranchKeepsTheCheckoutInStep(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := initRepo(t, g, false)
	r := Repository{URL: dir, Author: testAuthor}
	// The user's own work in progress: a modified tracked file and an untracked one.
	g.Expect(os.WriteFile(filepath.Join(dir, "README.md"), []byte("fleet, edited\n"), 0o600)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "scratch.txt"), []byte("mine\n"), 0o600)).To(Succeed())

	_, err := r.PutCluster(ctx, "mgmt", "w1", []byte("spec: 1\n"))
	g.Expect(err).NotTo(HaveOccurred())

	spec, err := os.ReadFile(filepath.Join(dir, "clusters/mgmt/workload-clusters/w1/cluster.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(spec)).To(Equal("spec: 1\n"), "the checkout has the committed file")
	status := worktreeStatus(g, dir)
	g.Expect(status).NotTo(HaveKey("clusters/mgmt/workload-clusters/w1/cluster.yaml"), "and it is not shown as changed")
	g.Expect(status).To(HaveKeyWithValue("README.md", HaveField("Worktree", git.Modified)), "the user's change is left alone")
	g.Expect(status).To(HaveKeyWithValue("scratch.txt", HaveField("Worktree", git.Untracked)))

	_, err = r.RemoveCluster(ctx, "mgmt", "w1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(filepath.Join(dir, "clusters/mgmt/workload-clusters/w1/cluster.yaml")).NotTo(BeAnExistingFile())
	g.Expect(worktreeStatus(g, dir)).NotTo(HaveKey("clusters/mgmt/workload-clusters/w1/cluster.yaml"))
}

func TestUncommittedChangesToASpecStopTheCommit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := initRepo(t, g, false)
	r := Repository{URL: dir, Author: testAuthor}
	first, err := r.PutCluster(ctx, "mgmt", "w1", []byte("spec: 1\n"))
	g.Expect(err).NotTo(HaveOccurred())
	specFile := filepath.Join(dir, "clusters/mgmt/workload-clusters/w1/cluster.yaml")
	g.Expect(os.WriteFile(specFile, []byte("spec: edited by hand\n"), 0o600)).To(Succeed())

	_, err = r.PutCluster(ctx, "mgmt", "w1", []byte("spec: 2\n"))
	g.Expect(err).To(MatchError(ContainSubstring("has uncommitted changes to clusters/mgmt/workload-clusters/w1/cluster.yaml: commit or discard them first")))
	g.Expect(headCommit(g, dir).Hash.String()).To(Equal(first.Commit), "the branch did not move")
	content, err := os.ReadFile(specFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(content)).To(Equal("spec: edited by hand\n"), "the user's edit is kept")
}

func TestCommittingToABranchThatIsNotCheckedOutLeavesTheCheckoutAlone(t *testing.T) {
	g := NewWithT(t)
	dir := initRepo(t, g, false)
	r := Repository{URL: dir, Branch: "fleet", Author: testAuthor}
	res, err := r.PutCluster(context.Background(), "mgmt", "w1", []byte("spec: 1\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeTrue())
	g.Expect(filepath.Join(dir, "clusters")).NotTo(BeADirectory())
	g.Expect(worktreeStatus(g, dir)).To(BeEmpty())

	repo, err := git.PlainOpen(dir)
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := repo.Reference(plumbing.NewBranchReferenceName("fleet"), true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref.Hash().String()).To(Equal(res.Commit))
	commit, err := repo.CommitObject(ref.Hash())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(commit.ParentHashes).To(BeEmpty(), "a new branch starts with its own first commit")
}

func worktreeStatus(g Gomega, dir string) git.Status {
	repo, err := git.PlainOpen(dir)
	g.Expect(err).NotTo(HaveOccurred())
	wt, err := repo.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	status, err := wt.Status()
	g.Expect(err).NotTo(HaveOccurred())
	return status
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		repo    Repository
		wantErr string
	}{
		{name: "an absolute path is valid", repo: Repository{URL: "/srv/fleet.git"}},
		{name: "an HTTPS URL is valid", repo: Repository{URL: "https://git.example.com/fleet.git", Branch: "clusters"}},
		{name: "an scp-like SSH address is valid", repo: Repository{URL: "git@github.com:example/fleet.git"}},
		{name: "a file URL is valid", repo: Repository{URL: "file:///srv/fleet.git"}},
		{name: "an empty repository is not", repo: Repository{}, wantErr: "the repository is empty"},
		{name: "a relative path is not", repo: Repository{URL: "fleet"}, wantErr: `repository "fleet" is a relative path: use an absolute path`},
		{name: "a branch git would refuse is not", repo: Repository{URL: "/srv/fleet.git", Branch: "a..b"}, wantErr: `branch "a..b" is not a valid branch name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tt.repo.Validate()
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestCommitsAreSignedWithTheDefaultAuthorWhenNoneIsGiven(t *testing.T) {
	g := NewWithT(t)
	dir := initRepo(t, g, true)
	before := time.Now().Add(-time.Second)
	_, err := Repository{URL: dir}.PutCluster(context.Background(), "mgmt", "w1", []byte("x\n"))
	g.Expect(err).NotTo(HaveOccurred())
	head := headCommit(g, dir)
	g.Expect(head.Author.Name).To(Equal(DefaultAuthor.Name))
	g.Expect(head.Author.Email).To(Equal(DefaultAuthor.Email))
	g.Expect(head.Author.When).To(BeTemporally(">", before))
}

func TestStringLeavesOutAPasswordInTheURL(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Repository{URL: "https://bot:s3cret@git.example.com/fleet.git"}.String()).
		To(Equal("https://bot:xxxxx@git.example.com/fleet.git (branch main)"))
	g.Expect(Repository{URL: "/srv/fleet.git", Branch: "clusters"}.String()).To(Equal("/srv/fleet.git (branch clusters)"))
}
