package gitops

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5"
	. "github.com/onsi/gomega"
)

func TestPullReadsTheSpecsOfOneManagementCluster(t *testing.T) {
	tests := []struct {
		name string
		url  func(dir string) string
	}{
		{name: "a repository given by path is read in place", url: func(dir string) string { return dir }},
		{name: "a repository reached through a URL is fetched into the cache", url: func(dir string) string { return "file://" + dir }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			dir := initRepo(t, g, true)
			w := Repository{URL: dir, Author: testAuthor}
			for _, name := range []string{"mgmt", "w2", "w1"} {
				_, err := w.PutCluster(ctx, "mgmt", name, []byte(name+"\n"))
				g.Expect(err).NotTo(HaveOccurred())
			}
			_, err := w.PutCluster(ctx, "other", "w9", []byte("w9\n"))
			g.Expect(err).NotTo(HaveOccurred())
			first, err := w.commit(ctx, func(f *files) (string, error) {
				// Not a spec: ignored.
				return "Notes", f.write("clusters/mgmt/workload-clusters/w1/NOTES.md", []byte("notes\n"))
			})
			g.Expect(err).NotTo(HaveOccurred())

			r := Repository{URL: tt.url(dir)}
			cache := filepath.Join(t.TempDir(), "cache")
			snap, err := r.Pull(ctx, cache)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(snap.Commit()).To(Equal(first.Commit))
			specs, err := snap.Specs("mgmt")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(specs).To(HaveExactElements(
				And(HaveField("Path", "clusters/mgmt/cluster.yaml"), HaveField("Cluster", "mgmt"), HaveField("Management", true), HaveField("Data", []byte("mgmt\n"))),
				And(HaveField("Path", "clusters/mgmt/workload-clusters/w1/cluster.yaml"), HaveField("Cluster", "w1"), HaveField("Management", false), HaveField("Data", []byte("w1\n"))),
				And(HaveField("Path", "clusters/mgmt/workload-clusters/w2/cluster.yaml"), HaveField("Cluster", "w2"), HaveField("Management", false)),
			))
			g.Expect(snap.Unchanged("", specs[1])).To(BeFalse(), "without an earlier commit, everything is new")
			g.Expect(snap.Unchanged(first.Commit, specs[1])).To(BeTrue())

			// A new commit changes w1 only; the next pull sees it, and only it as changed.
			second, err := w.PutCluster(ctx, "mgmt", "w1", []byte("w1 scaled\n"))
			g.Expect(err).NotTo(HaveOccurred())
			snap, err = r.Pull(ctx, cache)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(snap.Commit()).To(Equal(second.Commit))
			specs, err = snap.Specs("mgmt")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(specs[1].Data).To(Equal([]byte("w1 scaled\n")))
			g.Expect(snap.Unchanged(first.Commit, specs[0])).To(BeTrue())
			g.Expect(snap.Unchanged(first.Commit, specs[1])).To(BeFalse())
			g.Expect(snap.Unchanged(first.Commit, specs[2])).To(BeTrue())
			g.Expect(snap.Unchanged("0123456789012345678901234567890123456789", specs[0])).To(BeFalse(), "an unknown commit")

			none, err := snap.Specs("absent")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(none).To(BeEmpty())
		})
	}
}

func TestPullOfABranchWithoutCommitsIsErrBranchNotFound(t *testing.T) {
	tests := []struct {
		name string
		url  func(dir string) string
	}{
		{name: "by path", url: func(dir string) string { return dir }},
		{name: "through a URL", url: func(dir string) string { return "file://" + dir }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			_, err := git.PlainInit(dir, true)
			g.Expect(err).NotTo(HaveOccurred())
			_, err = Repository{URL: tt.url(dir)}.Pull(context.Background(), filepath.Join(t.TempDir(), "cache"))
			g.Expect(errors.Is(err, ErrBranchNotFound)).To(BeTrue(), "got %v", err)
		})
	}
}

func TestPullOfAPathWithoutARepositorySaysHowToCreateOne(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	_, err := Repository{URL: dir}.Pull(context.Background(), "")
	g.Expect(err).To(MatchError(ContainSubstring("no Git repository at " + dir + ": create one with `git init --bare " + dir + "`")))
}

func TestPullFollowsAChangedURL(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	one, two := initRepo(t, g, true), initRepo(t, g, true)
	_, err := Repository{URL: two, Author: testAuthor}.PutCluster(ctx, "mgmt", "w1", []byte("w1\n"))
	g.Expect(err).NotTo(HaveOccurred())
	cache := filepath.Join(t.TempDir(), "cache")

	snap, err := Repository{URL: "file://" + one}.Pull(ctx, cache)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(snap.Specs("mgmt")).To(BeEmpty())

	snap, err = Repository{URL: "file://" + two}.Pull(ctx, cache)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(snap.Specs("mgmt")).To(HaveLen(1))
}
