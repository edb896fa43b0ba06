package gitops

import (
	"context"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	. "github.com/onsi/gomega"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/gittest"
)

// Repositories on a real Git HTTP server (git http-backend) on loopback, one that asks for
// credentials, and a server that never answers.

func TestARepositoryBehindBasicAuthOverLoopbackHTTPIsCommittedToAndPulled(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	_, err := git.PlainInit(dir, true)
	g.Expect(err).NotTo(HaveOccurred())
	url := gittest.Serve(t, dir, gittest.BasicAuth("bot", "token"))

	_, err = Repository{URL: url}.PutCluster(ctx, "mgmt", "w1", []byte("kind: Cluster\n"))
	g.Expect(err).To(MatchError(ContainSubstring("authentication required")), "without credentials")

	auth, err := AuthFromSecret(url, map[string][]byte{
		flotillav1.GitOpsUsernameKey: []byte("bot"), flotillav1.GitOpsPasswordKey: []byte("token"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	repo := Repository{URL: url, Auth: auth}
	res, err := repo.PutCluster(ctx, "mgmt", "w1", []byte("kind: Cluster\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeTrue())
	g.Expect(fileAt(g, dir, SpecPath("mgmt", "w1"))).To(Equal("kind: Cluster\n"))

	snap, err := repo.Pull(ctx, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(snap.Commit()).To(Equal(res.Commit))
}

func TestAGitServerThatNeverAnswersFailsEachExchangeAtTheTimeout(t *testing.T) {
	hung := gittest.Hung(t)
	repo := Repository{URL: hung.URL, Timeout: 500 * time.Millisecond}
	tests := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{name: "a pull (fetch)", run: func(ctx context.Context) error {
			_, err := repo.Pull(ctx, t.TempDir())
			return err
		}},
		{name: "a commit (clone, then push)", run: func(ctx context.Context) error {
			_, err := repo.PutCluster(ctx, "mgmt", "w1", []byte("kind: Cluster\n"))
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			start := time.Now()
			err := tt.run(context.Background())
			g.Expect(err).To(MatchError(ErrTimeout))
			g.Expect(err.Error()).To(ContainSubstring("no answer within 500ms"))
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
			g.Expect(hung.Accepted).To(Receive(), "the server was reached")
		})
	}
}

func TestATimeoutIsNotReportedForACanceledContext(t *testing.T) {
	g := NewWithT(t)
	hung := gittest.Hung(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Repository{URL: hung.URL, Timeout: time.Minute}.Pull(ctx, t.TempDir())
	g.Expect(err).To(HaveOccurred())
	g.Expect(err).NotTo(MatchError(ErrTimeout))
}
