package client_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

func TestDeletingTheLastClusterOfAHomeStopsItsSupervisor(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	exe, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	sleep, err := exec.LookPath("sleep")
	g.Expect(err).NotTo(HaveOccurred())
	var progress bytes.Buffer
	c := &client.Client{Home: t.TempDir(), Executable: exe, Out: &progress}
	t.Cleanup(func() { _ = supervisor.Stop(context.Background(), c.Home) })

	// Two local clusters, as their directories record them: a process each.
	pids := map[string]int{}
	for _, name := range []string{"one", "two"} {
		keeper := process.InDir(controlplane.ClusterDir(c.Home, name))
		unlock, err := keeper.Lock(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		p, err := keeper.Ensure(ctx, process.Spec{Name: "sleeper", Path: sleep, Args: []string{"600"}})
		unlock()
		g.Expect(err).NotTo(HaveOccurred())
		pids[name] = p.PID
		t.Cleanup(func() { _ = keeper.StopAll(context.Background(), time.Second) })
	}
	g.Expect(c.EnsureSupervisor(ctx)).To(Succeed())
	pid, running := supervisor.PID(c.Home)
	g.Expect(running).To(BeTrue())

	g.Expect(c.DeleteManagementCluster(ctx, client.DeleteManagementClusterOptions{Name: "one", OutDir: t.TempDir()})).To(Succeed())
	g.Expect(process.Alive(pids["one"])).To(BeFalse())
	g.Expect(process.Alive(pid)).To(BeTrue(), "cluster two is left to supervise")

	g.Expect(c.DeleteManagementCluster(ctx, client.DeleteManagementClusterOptions{Name: "two", OutDir: t.TempDir()})).To(Succeed())
	g.Expect(process.Alive(pids["two"])).To(BeFalse())
	g.Expect(process.Alive(pid)).To(BeFalse(), "the last cluster went, and the supervisor with it")
	g.Expect(supervisor.Running(c.Home)).To(BeFalse())
	g.Expect(progress.String()).To(ContainSubstring(fmt.Sprintf("Stopped the supervisor of %s (pid %d)", c.Home, pid)))
	g.Consistently(func() bool { return supervisor.Running(c.Home) }).WithTimeout(time.Second).Should(BeFalse(), "and nothing starts it again")
}
