package process

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
)

// lookPath returns the absolute path of a program the tests run, failing the test without it.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("the process tests run %s: %v", name, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// newKeeper returns a Keeper of a fresh directory that stops what it started when the
// test ends.
func newKeeper(t *testing.T) Keeper {
	t.Helper()
	dir := t.TempDir()
	s := Keeper{RunDir: filepath.Join(dir, "run"), LogDir: filepath.Join(dir, "logs")}
	t.Cleanup(func() { _ = s.StopAll(ctrl.LoggerInto(context.Background(), logr.Discard()), time.Second) })
	return s
}

func sleepSpec(t *testing.T, name string) Spec {
	return Spec{Name: name, Path: lookPath(t, "sleep"), Args: []string{"1000"}}
}

func TestEnsureStartsAProcessThatAFreshKeeperAdopts(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	spec := sleepSpec(t, "sleeper")

	started, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(started.Adopted).To(BeFalse())
	g.Expect(Alive(started.PID)).To(BeTrue())

	// The pid file holds just the pid, and the bookkeeping is private to the user.
	data, err := os.ReadFile(s.PIDPath("sleeper"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(Equal(strconv.Itoa(started.PID) + "\n"))
	for _, path := range []string{s.PIDPath("sleeper"), s.recordPath("sleeper"), s.LogPath("sleeper")} {
		info, err := os.Stat(path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o600)), path)
	}

	// Detached: the process leads a session of its own, so the starter's signals and exit do
	// not reach it.
	sid, err := getsid(started.PID)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sid).To(Equal(started.PID))

	fresh := Keeper{RunDir: s.RunDir, LogDir: s.LogDir}
	_, why := fresh.check("sleeper")
	g.Expect(why).To(BeEmpty())
	adopted, err := fresh.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(adopted.PID).To(Equal(started.PID))
	g.Expect(adopted.Adopted).To(BeTrue())
	g.Expect(adopted.Started).To(Equal(started.Started))

	g.Expect(fresh.Stop(ctx, "sleeper", time.Second)).To(Succeed())
	g.Expect(Alive(started.PID)).To(BeFalse())
	g.Expect(s.PIDPath("sleeper")).NotTo(BeAnExistingFile())
	_, running := fresh.Running("sleeper")
	g.Expect(running).To(BeFalse())
}

// starterEnv, when set to a directory, makes the test binary act as a short-lived program that
// starts a sleep under the Keeper of that directory and exits.
const starterEnv = "FLOTILLA_PROCESS_TEST_STARTER"

func TestMain(m *testing.M) {
	if dir := os.Getenv(starterEnv); dir != "" {
		s := Keeper{RunDir: filepath.Join(dir, "run"), LogDir: filepath.Join(dir, "logs")}
		sleep, err := exec.LookPath("sleep")
		if err == nil {
			_, err = s.Ensure(ctrl.LoggerInto(context.Background(), logr.Discard()), Spec{Name: "sleeper", Path: sleep, Args: []string{"1000"}})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestAProcessOutlivesTheProgramThatStartedIt(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	dir := filepath.Dir(s.RunDir)

	starter := exec.Command(os.Args[0], "-test.run=^$")
	starter.Env = append(os.Environ(), starterEnv+"="+dir)
	out, err := starter.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))

	sleep, err := exec.LookPath("sleep")
	g.Expect(err).NotTo(HaveOccurred())
	p, err := s.Ensure(ctx, Spec{Name: "sleeper", Path: sleep, Args: []string{"1000"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Adopted).To(BeTrue(), "the process started by the exited program still runs")
	g.Expect(Alive(p.PID)).To(BeTrue())
}

func TestEnsureRestartsWhenTheCommandLineChanged(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	spec := sleepSpec(t, "sleeper")

	first, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())

	spec.Args = []string{"2000"}
	second, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Adopted).To(BeFalse())
	g.Expect(second.PID).NotTo(Equal(first.PID))
	g.Expect(Alive(first.PID)).To(BeFalse())
	g.Expect(Cmdline(second.PID)).To(Equal([]string{spec.Path, "2000"}))
}

func TestDiffersTellsWhatEnsureWouldRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	spec := sleepSpec(t, "sleeper")
	g.Expect(s.Differs(spec)).To(BeFalse(), "nothing runs: Ensure would start, not restart")

	_, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Differs(spec)).To(BeFalse())

	changed := spec
	changed.Args = []string{"2000"}
	g.Expect(s.Differs(changed)).To(BeTrue())
	changed = spec
	changed.Env = []string{"DIGEST=2"}
	g.Expect(s.Differs(changed)).To(BeTrue())
}

func TestEnsureRestartsADeadProcessThatHadRunAWhileAtOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	spec := sleepSpec(t, "sleeper")

	first, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	ranSince(t, s, "sleeper", StableAfter+time.Second)
	g.Expect(syscall.Kill(first.PID, syscall.SIGKILL)).To(Succeed())
	// The reaping goroutine collects the child: it does not linger as a zombie.
	g.Eventually(func() bool { _, err := readStat(first.PID); return os.IsNotExist(err) }).
		WithTimeout(5 * time.Second).Should(BeTrue())

	second, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Adopted).To(BeFalse())
	g.Expect(second.Restarted).To(BeTrue())
	g.Expect(second.PID).NotTo(Equal(first.PID))
	g.Expect(second.History).To(Equal(History{Restarts: 1, LastExit: "signal: killed"}), "it was this program's child: how it ended is known")
}

func TestAStalePIDFileIsNeverSignalled(t *testing.T) {
	tests := []struct {
		name string
		pid  func(t *testing.T) int
	}{
		{name: "a pid that now belongs to an unrelated process", pid: func(t *testing.T) int {
			cmd := exec.Command(lookPath(t, "sleep"), "1000")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			return cmd.Process.Pid
		}},
		{name: "a pid that no longer exists", pid: func(*testing.T) int { return 1 << 22 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := testContext(t)
			s := newKeeper(t)
			spec := sleepSpec(t, "sleeper")
			pid := tt.pid(t)
			// A record that claims the pid with our command line, as after a reboot.
			g.Expect(os.MkdirAll(s.RunDir, 0o700)).To(Succeed())
			g.Expect(s.writeRecord("sleeper", record{PID: pid, Argv: spec.argv(), StartTime: 1})).To(Succeed())

			p, err := s.Ensure(ctx, spec)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Adopted).To(BeFalse())
			g.Expect(p.PID).NotTo(Equal(pid))

			g.Expect(s.Stop(ctx, "sleeper", time.Second)).To(Succeed())
			if pid < 1<<22 {
				g.Expect(Alive(pid)).To(BeTrue(), "the unrelated process was signalled")
			}
		})
	}
}

func TestAZombieCountsAsDead(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	spec := sleepSpec(t, "sleeper")

	// A child that nobody waits for becomes a zombie when it exits.
	cmd := exec.Command(spec.Path, spec.Args...)
	g.Expect(cmd.Start()).To(Succeed())
	zombie := cmd.Process.Pid
	t.Cleanup(func() { _ = cmd.Wait() })
	st, err := readStat(zombie)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.MkdirAll(s.RunDir, 0o700)).To(Succeed())
	g.Expect(s.writeRecord("sleeper", record{PID: zombie, Argv: spec.argv(), StartTime: st.StartTime})).To(Succeed())
	_, running := s.Running("sleeper")
	g.Expect(running).To(BeTrue(), "the live process matches its record")

	g.Expect(syscall.Kill(zombie, syscall.SIGKILL)).To(Succeed())
	g.Eventually(func() byte { st, _ := readStat(zombie); return st.State }).Should(Equal(byte('Z')))

	g.Expect(Alive(zombie)).To(BeFalse())
	_, running = s.Running("sleeper")
	g.Expect(running).To(BeFalse())
	p, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Adopted).To(BeFalse())
	g.Expect(p.PID).NotTo(Equal(zombie))
}

func TestStopKillsAProcessThatIgnoresSIGTERM(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	spec := Spec{Name: "stubborn", Path: lookPath(t, "sh"), Args: []string{"-c", `trap "" TERM; echo "ignoring" "TERM"; while :; do sleep 0.1; done`}}

	p, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string { return s.LogTail("stubborn", 5) }).Should(ContainSubstring("ignoring TERM"), "the trap is set")

	start := time.Now()
	g.Expect(s.Stop(ctx, "stubborn", 300*time.Millisecond)).To(Succeed())
	g.Expect(time.Since(start)).To(BeNumerically(">=", 300*time.Millisecond))
	g.Expect(Alive(p.PID)).To(BeFalse())
}

func TestAProcessGetsAFixedEnvironmentAndItsLog(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	t.Setenv("KUBECONFIG", "/from/the/starter")
	spec := Spec{Name: "env", Path: lookPath(t, "sh"), Args: []string{"-c", `echo "flavour=$FLAVOUR kubeconfig=$KUBECONFIG"; sleep 1000`}, Env: []string{"FLAVOUR=plain"}}

	p, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string { return s.LogTail("env", 5) }).Should(HaveSuffix("flavour=plain kubeconfig="))

	// Stop signals the whole process group: the shell's sleep goes too.
	g.Expect(s.Stop(ctx, "env", time.Second)).To(Succeed())
	g.Eventually(func() []string { return liveGroupMembers(t, p.PID) }).Should(BeEmpty())
}

func TestSpecsAreValidated(t *testing.T) {
	tests := []struct {
		name    string
		spec    Spec
		wantErr string
	}{
		{name: "a relative program path is refused", spec: Spec{Name: "x", Path: "sleep"}, wantErr: "must be absolute"},
		{name: "a name with a slash is refused", spec: Spec{Name: "a/b", Path: "/bin/sleep"}, wantErr: "non-empty file name"},
		{name: "a missing program is reported", spec: Spec{Name: "x", Path: "/nonexistent/program"}, wantErr: "starting x (/nonexistent/program)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := newKeeper(t).Ensure(testContext(t), tt.spec)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

// testContext returns a context whose logger writes to the test's log.
func testContext(t *testing.T) context.Context {
	return ctrl.LoggerInto(context.Background(), testr.NewWithOptions(t, testr.Options{Verbosity: 1}))
}

// liveGroupMembers lists the processes of process group pgid that are not zombies (init may take
// its time to reap those it inherits).
func liveGroupMembers(t *testing.T, pgid int) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		end := strings.LastIndexByte(string(data), ')')
		fields := strings.Fields(string(data[end+2:]))
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			live = append(live, string(data[:end+1]))
		}
	}
	return live
}

func getsid(pid int) (int, error) {
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(pid), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(sid), nil
}

func TestAStartWhoseRecordWasNeverWrittenIsAdoptedNotDuplicated(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	spec := sleepSpec(t, "sleeper")
	g.Expect(os.MkdirAll(s.RunDir, 0o700)).To(Succeed())

	// What a starter killed between exec(2) and writing the record leaves behind: the process,
	// marked with the path of its record, and no record. Another marked process runs a command
	// line of its own (a child that inherited the mark).
	marker, err := filepath.Abs(s.recordPath("sleeper"))
	g.Expect(err).NotTo(HaveOccurred())
	startMarked := func(args ...string) int {
		cmd := exec.Command(spec.Path, args...)
		cmd.Env = append(environment(nil), markerEnv+"="+marker)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		g.Expect(cmd.Start()).To(Succeed())
		go func() { _ = cmd.Wait() }()
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		waitExec(cmd.Process.Pid, append([]string{spec.Path}, args...))
		return cmd.Process.Pid
	}
	other := startMarked("999")
	orphan := startMarked(spec.Args...)

	p, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.PID).To(Equal(orphan), "the unrecorded process is adopted, not started a second time")
	g.Expect(p.Adopted).To(BeTrue())
	g.Expect(Alive(other)).To(BeTrue(), "a marked process with another command line is left alone")

	// It is recorded now: a fresh Keeper adopts it through its record, and Stop stops it.
	fresh := Keeper{RunDir: s.RunDir, LogDir: s.LogDir}
	again, err := fresh.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.PID).To(Equal(orphan))
	g.Expect(fresh.Stop(ctx, "sleeper", time.Second)).To(Succeed())
	g.Eventually(func() bool { return Gone(orphan) }).Should(BeTrue())
}
