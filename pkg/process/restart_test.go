package process

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// ranSince rewrites the record of name as if the process had started ago before now.
func ranSince(t *testing.T, s Keeper, name string, ago time.Duration) {
	t.Helper()
	rec, why := s.check(name)
	if why != "" {
		t.Fatalf("%s: %s", name, why)
	}
	rec.Started = time.Now().Add(-ago).UTC().Format(time.RFC3339Nano)
	if err := s.writeRecord(name, rec); err != nil {
		t.Fatal(err)
	}
}

// killAndReap kills pid, a child of the test, and waits until it has been reaped.
func killAndReap(t *testing.T, pid int) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	g.Eventually(func() bool { _, err := readStat(pid); return os.IsNotExist(err) }).WithTimeout(5 * time.Second).Should(BeTrue())
}

func TestBackOffDoublesFromOneSecondAndStopsAtAMinute(t *testing.T) {
	g := NewWithT(t)
	var waits []time.Duration
	for failures := range 10 {
		waits = append(waits, BackOff(failures))
	}
	g.Expect(waits).To(Equal([]time.Duration{0, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second,
		16 * time.Second, 32 * time.Second, time.Minute, time.Minute, time.Minute}))
	g.Expect(BackOff(1000)).To(Equal(MaxBackOff), "no overflow")
}

func TestHistoryCountsQuickExitsAsFailuresAndForgetsThemAfterAStableRun(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	var h History
	h = h.Exited("exit status 1", time.Second, now)
	g.Expect(h.Failures).To(Equal(1))
	g.Expect(h.NextStart).To(Equal(now.Add(time.Second)))
	h = h.Exited("exit status 1", time.Second, now)
	h = h.Exited("exit status 1", time.Second, now)
	g.Expect(h.Failures).To(Equal(3))
	g.Expect(h.NextStart).To(Equal(now.Add(4 * time.Second)))
	g.Expect(h.CrashLooping(false, now, now)).To(BeTrue())
	g.Expect(h.CrashLooping(true, now.Add(-time.Second), now)).To(BeTrue(), "just started again")
	g.Expect(h.CrashLooping(true, now.Add(-StableAfter), now)).To(BeFalse(), "ran long enough since")

	h = h.Exited("signal: killed", StableAfter, now)
	g.Expect(h.Failures).To(BeZero())
	g.Expect(h.NextStart).To(Equal(now), "an accident is repaired at once")
	g.Expect(h.LastExit).To(Equal("signal: killed"))
}

func TestAProcessThatKeepsExitingBacksOffAndIsStartedAgainFromItsRecord(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	spec := sleepSpec(t, "sleeper")

	first, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	killAndReap(t, first.PID)

	// It ran for less than StableAfter: a failure, so it waits a second. Ensure and Keep agree.
	waiting, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(waiting.PID).To(BeZero())
	g.Expect(waiting.History.Failures).To(Equal(1))
	g.Expect(waiting.History.LastExit).To(Equal("signal: killed"))
	g.Expect(time.Until(waiting.History.NextStart)).To(BeNumerically("~", time.Second, 200*time.Millisecond))
	still, err := s.Keep(ctx, "sleeper")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(still.PID).To(BeZero())
	g.Expect(still.History).To(Equal(waiting.History), "the exit is counted once")
	inspected, recorded := s.Inspect("sleeper")
	g.Expect(recorded).To(BeTrue())
	g.Expect(inspected.PID).To(BeZero())

	// Keep starts it from its record once the wait is over, with the same command line.
	var second Process
	g.Eventually(func() int {
		second, err = s.Keep(ctx, "sleeper")
		g.Expect(err).NotTo(HaveOccurred())
		return second.PID
	}).WithTimeout(3 * time.Second).WithPolling(50 * time.Millisecond).ShouldNot(BeZero())
	g.Expect(second.Restarted).To(BeTrue())
	g.Expect(second.History.Restarts).To(Equal(1))
	g.Expect(Cmdline(second.PID)).To(Equal([]string{spec.Path, "1000"}))

	// The second quick exit waits twice as long.
	killAndReap(t, second.PID)
	third, err := s.Keep(ctx, "sleeper")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(third.PID).To(BeZero())
	g.Expect(third.History.Failures).To(Equal(2))
	g.Expect(time.Until(third.History.NextStart)).To(BeNumerically("~", 2*time.Second, 200*time.Millisecond))

	// A new command line starts at once, with a history of its own.
	spec.Args = []string{"2000"}
	changed, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed.PID).NotTo(BeZero())
	g.Expect(changed.History).To(Equal(History{}))
}

func TestATakenPortIsReportedAndBacksOffInsteadOfCrashing(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	address := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	spec := sleepSpec(t, "server")
	spec.Ports = []string{address}

	first, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	ranSince(t, s, "server", time.Hour)
	killAndReap(t, first.PID)

	// Another program takes the port while the server is down.
	l, err = net.Listen("tcp", address)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = l.Close() }()
	_, err = s.Keep(ctx, "server")
	var inUse *PortInUseError
	g.Expect(err).To(BeAssignableToTypeOf(inUse))
	g.Expect(err).To(MatchError(ContainSubstring("server cannot listen on " + address + ": the address is in use by another program")))
	p, recorded := s.Inspect("server")
	g.Expect(recorded).To(BeTrue())
	g.Expect(p.PID).To(BeZero())
	g.Expect(p.History.PortInUse).To(Equal(address))
	g.Expect(p.History.Failures).To(Equal(1), "the accident is repaired at once, the failed start backs off")
	g.Expect(p.History.NextStart).To(BeTemporally(">", time.Now()))

	// Once the port is free again it starts.
	g.Expect(l.Close()).To(Succeed())
	g.Eventually(func() int {
		p, err := s.Keep(ctx, "server")
		g.Expect(err).NotTo(HaveOccurred())
		return p.PID
	}).WithTimeout(3 * time.Second).WithPolling(100 * time.Millisecond).ShouldNot(BeZero())
}

func TestAStoppedProcessIsNotStartedAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	p, err := s.Ensure(ctx, sleepSpec(t, "sleeper"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Stop(ctx, "sleeper", time.Second)).To(Succeed())
	g.Expect(Alive(p.PID)).To(BeFalse())

	_, recorded := s.Inspect("sleeper")
	g.Expect(recorded).To(BeFalse())
	_, err = s.Keep(ctx, "sleeper")
	g.Expect(err).To(MatchError(ContainSubstring("nothing to start again")))
	names, err := s.Names()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(BeEmpty())
}

func TestLockSerialisesAndLockExistingCreatesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	dir := filepath.Join(t.TempDir(), "cluster")
	s := Keeper{RunDir: filepath.Join(dir, "run"), LogDir: filepath.Join(dir, "logs")}

	_, ok, err := s.LockExisting(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse())
	g.Expect(dir).NotTo(BeADirectory(), "a removed cluster is not brought back")

	unlock, err := s.Lock(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, _, err = s.LockExisting(short)
	g.Expect(err).To(MatchError(context.DeadlineExceeded), "held by another")

	// The holder removes the directory (Delete does) while another waits: the waiter ends up
	// with nothing to lock rather than a lock on a removed file.
	waited := make(chan bool, 1)
	go func() {
		unlockOther, ok, err := s.LockExisting(ctx)
		if err == nil && ok {
			unlockOther()
		}
		waited <- ok
	}()
	time.Sleep(50 * time.Millisecond)
	g.Expect(os.RemoveAll(dir)).To(Succeed())
	unlock()
	g.Eventually(waited).WithTimeout(2 * time.Second).Should(Receive(BeFalse()))
	g.Expect(dir).NotTo(BeADirectory())
}

// TestRecordsOfAnOlderVersionAreRead: a record without history (written before restarts were
// counted) still describes its process.
func TestRecordsOfAnOlderVersionAreRead(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	p, err := s.Ensure(ctx, sleepSpec(t, "sleeper"))
	g.Expect(err).NotTo(HaveOccurred())
	st, err := readStat(p.PID)
	g.Expect(err).NotTo(HaveOccurred())
	old := `{"pid": ` + strconv.Itoa(p.PID) + `, "argv": ["` + sleepSpec(t, "x").Path + `", "1000"], "startTime": ` +
		strconv.FormatUint(st.StartTime, 10) + `, "started": "2026-11-20T10:00:00Z"}`
	g.Expect(os.WriteFile(s.recordPath("sleeper"), []byte(old), 0o600)).To(Succeed())
	adopted, err := s.Ensure(ctx, sleepSpec(t, "sleeper"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(adopted.Adopted).To(BeTrue())
	g.Expect(adopted.Started).To(Equal(time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)))
}

func TestAForgivenProcessStartsAtOnceAndNoLongerCrashLoops(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	spec := sleepSpec(t, "sleeper")
	g.Expect(s.Forgive("sleeper")).To(Succeed(), "nothing recorded is nothing to forgive")

	// Three quick exits: it crash loops and waits out a back-off of four seconds.
	p, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	for range CrashLoopFailures {
		killAndReap(t, p.PID)
		p, err = s.Keep(ctx, "sleeper")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.PID).To(BeZero())
		g.Eventually(func() int {
			p, err = s.Keep(ctx, "sleeper")
			g.Expect(err).NotTo(HaveOccurred())
			return p.PID
		}).WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).ShouldNot(BeZero())
	}
	killAndReap(t, p.PID)
	waiting, err := s.Keep(ctx, "sleeper")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(waiting.PID).To(BeZero())
	g.Expect(waiting.History.CrashLooping(false, waiting.Started, time.Now())).To(BeTrue())

	// Forgiven (flotilla start), it starts at the next Keep, and its restarts are still counted.
	g.Expect(s.Forgive("sleeper")).To(Succeed())
	again, err := s.Keep(ctx, "sleeper")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.PID).NotTo(BeZero())
	g.Expect(again.History.Failures).To(BeZero())
	g.Expect(again.History.Restarts).To(Equal(CrashLoopFailures + 1))
	g.Expect(again.History.CrashLooping(true, again.Started, time.Now())).To(BeFalse())

	// Killed with the machine, before anyone noticed, then forgiven: the kill is no failure, so
	// two more quick exits are not a crash loop.
	killAndReap(t, again.PID)
	g.Expect(s.Forgive("sleeper")).To(Succeed())
	again, err = s.Keep(ctx, "sleeper")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.PID).NotTo(BeZero(), "started at once")
	g.Expect(again.History.Failures).To(BeZero())
	g.Expect(again.History.LastExit).To(Equal("signal: killed"), "the exit is recorded as it was")
	for range CrashLoopFailures - 1 {
		killAndReap(t, again.PID)
		g.Eventually(func() int {
			again, err = s.Keep(ctx, "sleeper")
			g.Expect(err).NotTo(HaveOccurred())
			return again.PID
		}).WithTimeout(5 * time.Second).WithPolling(50 * time.Millisecond).ShouldNot(BeZero())
	}
	g.Expect(again.History.Failures).To(Equal(CrashLoopFailures - 1))
	g.Expect(again.History.CrashLooping(true, again.Started, time.Now())).To(BeFalse())
}
