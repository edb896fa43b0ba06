package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

// homeEnv, when set, makes the test binary run the supervisor of that home, as `flotilla
// supervisor` does.
const homeEnv = "FLOTILLA_SUPERVISOR_TEST_HOME"

// idleEnv, when set with homeEnv, is that supervisor's IdleExit.
const idleEnv = "FLOTILLA_SUPERVISOR_TEST_IDLE"

const testInterval = 100 * time.Millisecond

func TestMain(m *testing.M) {
	if home := os.Getenv(homeEnv); home != "" {
		o := testOptions(home)
		if idle, err := time.ParseDuration(os.Getenv(idleEnv)); err == nil {
			o.IdleExit = idle
		}
		if err := Run(context.Background(), o); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testOptions(home string) Options {
	return Options{Home: home, Dirs: []string{filepath.Join(home, "clusters", "*")}, Interval: testInterval, IdleExit: time.Second}
}

func testContext(t *testing.T) context.Context {
	return ctrl.LoggerInto(t.Context(), testr.NewWithOptions(t, testr.Options{Verbosity: 1}))
}

// cluster returns the process.Keeper of cluster name in home; it stops what it started when
// the test ends.
func cluster(t *testing.T, home, name string) process.Keeper {
	dir := filepath.Join(home, "clusters", name)
	s := process.InDir(dir)
	t.Cleanup(func() {
		unlock, ok, err := s.LockExisting(context.Background())
		if err == nil && ok {
			_ = s.StopAll(context.Background(), time.Second)
			unlock()
		}
	})
	return s
}

func sleepSpec(t *testing.T, name string) process.Spec {
	path, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	return process.Spec{Name: name, Path: path, Args: []string{"1000"}}
}

// run runs a supervisor in this test until the test ends, and returns a channel that gets its
// result, then is closed.
func run(t *testing.T, ctx context.Context, o Options) <-chan error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, o)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("supervisor: %v", err)
		}
	})
	return done
}

func ensure(t *testing.T, ctx context.Context, s process.Keeper, spec process.Spec) process.Process {
	t.Helper()
	unlock, err := s.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	p, err := s.Ensure(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAKilledProcessIsStartedAgainFromItsRecord(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	home := t.TempDir()
	s := cluster(t, home, "one")
	first := ensure(t, ctx, s, sleepSpec(t, "sleeper"))
	run(t, ctx, testOptions(home))

	killed := time.Now()
	g.Expect(syscall.Kill(first.PID, syscall.SIGKILL)).To(Succeed())
	var again process.Process
	g.Eventually(func() int {
		again, _ = s.Inspect("sleeper")
		return again.PID
	}).WithTimeout(5 * time.Second).WithPolling(10 * time.Millisecond).ShouldNot(Or(BeZero(), Equal(first.PID)))
	t.Logf("killed -> running again in %s", time.Since(killed).Round(time.Millisecond))
	g.Expect(again.History.Restarts).To(Equal(1))
	g.Expect(again.History.LastExit).To(Equal("signal: killed"))
	g.Expect(process.Cmdline(again.PID)).To(Equal([]string{sleepSpec(t, "").Path, "1000"}))
	g.Consistently(func() int { p, _ := s.Inspect("sleeper"); return p.PID }).
		WithTimeout(5*testInterval).Should(Equal(again.PID), "one start, no duplicate")
}

func TestAStoppedProcessAndARemovedDirectoryStayStopped(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	home := t.TempDir()
	stopped := cluster(t, home, "stopped")
	removed := cluster(t, home, "removed")
	p := ensure(t, ctx, stopped, sleepSpec(t, "sleeper"))
	q := ensure(t, ctx, removed, sleepSpec(t, "sleeper"))
	run(t, ctx, testOptions(home))

	unlock, err := stopped.Lock(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stopped.Stop(ctx, "sleeper", time.Second)).To(Succeed())
	unlock()
	// As controlplane.Delete does: stop under the lock, then remove the directory.
	unlock, err = removed.Lock(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(removed.StopAll(ctx, time.Second)).To(Succeed())
	g.Expect(os.RemoveAll(filepath.Dir(removed.RunDir))).To(Succeed())
	unlock()

	g.Consistently(func() bool {
		_, recorded := stopped.Inspect("sleeper")
		_, err := os.Stat(filepath.Dir(removed.RunDir))
		return recorded || !errors.Is(err, os.ErrNotExist)
	}).WithTimeout(10 * testInterval).Should(BeFalse())
	g.Expect(process.Alive(p.PID)).To(BeFalse())
	g.Expect(process.Alive(q.PID)).To(BeFalse())
}

func TestACrashLoopBacksOff(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	home := t.TempDir()
	s := cluster(t, home, "crashing")
	spec := process.Spec{Name: "crasher", Path: "/bin/sh", Args: []string{"-c", "exit 3"}}
	ensure(t, ctx, s, spec)
	run(t, ctx, testOptions(home))

	// Every start is a failure: after 1 + 2 s of waits the third start has happened, and the
	// fourth waits 4 s, not a tick.
	var p process.Process
	g.Eventually(func() int {
		p, _ = s.Inspect("crasher")
		return p.History.Failures
	}).WithTimeout(10 * time.Second).WithPolling(50 * time.Millisecond).Should(BeNumerically(">=", process.CrashLoopFailures))
	g.Expect(p.History.LastExit).To(Equal("exit status 3"))
	g.Expect(p.History.CrashLooping(false, p.Started, time.Now())).To(BeTrue())
	g.Expect(p.History.NextStart.Sub(p.History.ExitedAt)).To(Equal(process.BackOff(p.History.Failures)))
	restarts := p.History.Restarts
	g.Consistently(func() int { p, _ := s.Inspect("crasher"); return p.History.Restarts }).
		WithTimeout(2*time.Second).Should(Equal(restarts), "no start during the back-off")
}

func TestOneSupervisorPerHomeAndAStandbyTakesOver(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	home := t.TempDir()
	s := cluster(t, home, "one")
	first := ensure(t, ctx, s, sleepSpec(t, "sleeper"))

	firstCtx, stopFirst := context.WithCancel(ctx)
	firstDone := run(t, firstCtx, testOptions(home))
	g.Eventually(func() bool { return Running(home) }).WithTimeout(2 * time.Second).Should(BeTrue())
	secondDone := run(t, ctx, testOptions(home))
	g.Consistently(secondDone).WithTimeout(3*testInterval).ShouldNot(Receive(), "the second one waits")

	stopFirst()
	g.Eventually(firstDone).Should(Receive(BeNil()))
	g.Expect(syscall.Kill(first.PID, syscall.SIGKILL)).To(Succeed())
	g.Eventually(func() int { p, _ := s.Inspect("sleeper"); return p.PID }).
		WithTimeout(5*time.Second).ShouldNot(Or(BeZero(), Equal(first.PID)), "the standby restarts it")
	g.Expect(Running(home)).To(BeTrue())
}

func TestEnsureStartsOneSupervisorThatExitsWhenNothingIsLeft(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	home := t.TempDir()
	s := cluster(t, home, "one")
	p := ensure(t, ctx, s, sleepSpec(t, "sleeper"))
	spec := process.Spec{Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{homeEnv + "=" + home}}
	t.Cleanup(func() { _ = Stop(context.Background(), home) })

	// Several commands at once start one supervisor.
	var wg sync.WaitGroup
	pids := make([]int, 4)
	for i := range pids {
		wg.Go(func() {
			pid, err := Ensure(ctx, home, spec)
			g.Expect(err).NotTo(HaveOccurred())
			pids[i] = pid
		})
	}
	wg.Wait()
	var started []int
	for _, pid := range pids {
		if pid != 0 {
			started = append(started, pid)
		}
	}
	g.Expect(started).To(HaveLen(1))
	g.Expect(Running(home)).To(BeTrue())
	pid, ok := PID(home)
	g.Expect(ok).To(BeTrue())
	g.Expect(pid).To(Equal(started[0]))

	// It keeps the process running, and exits a second after the last record is gone.
	g.Expect(syscall.Kill(p.PID, syscall.SIGKILL)).To(Succeed())
	g.Eventually(func() int { q, _ := s.Inspect("sleeper"); return q.PID }).
		WithTimeout(5 * time.Second).ShouldNot(Or(BeZero(), Equal(p.PID)))
	unlock, err := s.Lock(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.StopAll(ctx, time.Second)).To(Succeed())
	unlock()
	g.Eventually(func() bool { return process.Alive(pid) }).WithTimeout(5 * time.Second).Should(BeFalse())
	g.Expect(Running(home)).To(BeFalse())
}

func TestASupervisorWhoseHomeIsRemovedExitsAndLeavesItRemoved(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	home := filepath.Join(t.TempDir(), "home")
	g.Expect(os.MkdirAll(home, 0o700)).To(Succeed())
	done := run(t, ctx, testOptions(home))
	g.Eventually(func() bool { return Running(home) }).WithTimeout(5 * time.Second).Should(BeTrue())

	g.Expect(os.RemoveAll(home)).To(Succeed())
	g.Eventually(done).WithTimeout(5*time.Second).Should(Receive(BeNil()), "it exits once idle")
	_, err := os.Stat(home)
	g.Expect(err).To(MatchError(os.ErrNotExist), "and creates nothing again")
}

func TestStopIfIdleStopsTheSupervisorEnsureStartedOnceTheLastRecordIsGone(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	home := t.TempDir()
	dirs := testOptions(home).Dirs
	s := cluster(t, home, "one")
	ensure(t, ctx, s, sleepSpec(t, "sleeper"))
	// A supervisor that would stay a minute with nothing to supervise.
	spec := process.Spec{Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: []string{homeEnv + "=" + home, idleEnv + "=1m"}}
	t.Cleanup(func() { _ = Stop(context.Background(), home) })
	pid, err := Ensure(ctx, home, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pid).NotTo(BeZero())

	stopped, err := StopIfIdle(ctx, home, dirs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stopped).To(BeZero(), "a process is recorded")
	g.Expect(process.Alive(pid)).To(BeTrue())

	unlock, err := s.Lock(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.StopAll(ctx, time.Second)).To(Succeed())
	unlock()
	stopped, err = StopIfIdle(ctx, home, dirs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stopped).To(Equal(pid))
	g.Expect(process.Alive(pid)).To(BeFalse())
	g.Expect(Running(home)).To(BeFalse())
	_, recorded := PID(home)
	g.Expect(recorded).To(BeFalse())
}

func TestStopIfIdleLeavesASupervisorEnsureDidNotStart(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	home := t.TempDir()
	o := testOptions(home)
	o.IdleExit = -1 // as `flotilla supervisor --idle-exit 0` from systemd
	done := run(t, ctx, o)
	g.Eventually(func() bool { return Running(home) }).WithTimeout(5 * time.Second).Should(BeTrue())

	stopped, err := StopIfIdle(ctx, home, o.Dirs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stopped).To(BeZero())
	g.Consistently(done).WithTimeout(3*testInterval).ShouldNot(Receive(), "it runs on")
	g.Expect(Running(home)).To(BeTrue())
}
