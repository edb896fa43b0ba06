package client

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWritesAreRetriedOnlyWhileTheWebhooksCannotBeCalled(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	unreachable := apierrors.NewInternalError(errors.New(`failed calling webhook "validate.cluster.flotilla.dev": failed to call webhook: Post "https://127.0.0.1:4242/validate": dial tcp 127.0.0.1:4242: connect: connection refused`))

	calls := 0
	err := retryWebhook(ctx, func() error {
		if calls++; calls < 3 {
			return unreachable
		}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(calls).To(Equal(3), "the manager came back: the write went through")

	denied := apierrors.NewForbidden(schema.GroupResource{Group: "cluster.flotilla.dev", Resource: "clusters"}, "w1", errors.New("admission webhook denied the request"))
	calls = 0
	err = retryWebhook(ctx, func() error { calls++; return denied })
	g.Expect(err).To(Equal(error(denied)), "a webhook that answered is not asked again")
	g.Expect(calls).To(Equal(1))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = retryWebhook(cancelled, func() error { return unreachable })
	g.Expect(err).To(Equal(error(unreachable)))
}

func TestTheSystemdUnitRunsTheSupervisorOfTheHomeAndStopsOnlyIt(t *testing.T) {
	g := NewWithT(t)
	exe := filepath.Join(t.TempDir(), "flotilla")
	g.Expect(os.WriteFile(exe, nil, 0o700)).To(Succeed())
	c := &Client{Home: "/home/me/.flotilla", Executable: exe}

	unit, err := c.SystemdUnit()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unit).To(ContainSubstring("\nExecStart=" + exe + " supervisor --home /home/me/.flotilla --idle-exit 0\n"))
	g.Expect(unit).To(ContainSubstring("\nRestart=always\n"))
	g.Expect(unit).To(ContainSubstring("\nKillMode=process\n"), "stopping the unit leaves the clusters running")
	g.Expect(unit).To(ContainSubstring("\nWantedBy=default.target\n"))

	c.Home = "/home/me/my flotilla"
	_, err = c.SystemdUnit()
	g.Expect(err).To(MatchError(ContainSubstring(`"/home/me/my flotilla": systemd units need paths without spaces`)))
}
