package process

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// maxLogSize is the size past which a log file is rotated to <name>.log.1 before a start.
const maxLogSize = 10 << 20

// inheritedEnv lists the variables of the starter's environment a process inherits; the rest
// of its environment is Spec.Env. A small, fixed environment keeps a process independent of
// where it was started from (a shell with KUBECONFIG set, a manager Pod, a test).
var inheritedEnv = []string{"PATH", "HOME", "USER", "TMPDIR", "LANG", "TZ"}

// Start starts spec unconditionally, detached from the caller (see the package documentation),
// and records it with an empty history. Use Ensure unless the caller has just checked that
// nothing runs.
func (k Keeper) Start(ctx context.Context, spec Spec) (Process, error) {
	if err := spec.validate(); err != nil {
		return Process{}, err
	}
	return k.start(ctx, spec, History{})
}

// start starts spec once its ports are free, and records it with history h.
func (k Keeper) start(ctx context.Context, spec Spec, h History) (Process, error) {
	for _, dir := range []string{k.RunDir, k.LogDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return Process{}, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	marker, err := filepath.Abs(k.recordPath(spec.Name))
	if err != nil {
		return Process{}, fmt.Errorf("locating the record of %s: %w", spec.Name, err)
	}
	if p, ok, err := k.adoptUnrecorded(ctx, spec, marker, h); ok || err != nil {
		return p, err
	}
	if err := CheckPorts(ctx, spec); err != nil {
		return Process{}, err
	}
	logFile, err := k.openLog(spec)
	if err != nil {
		return Process{}, err
	}
	defer func() { _ = logFile.Close() }() // the child holds its own descriptor

	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return Process{}, fmt.Errorf("opening %s: %w", os.DevNull, err)
	}
	defer func() { _ = devNull.Close() }()

	// Not exec.CommandContext: the process must outlive ctx and the caller.
	cmd := exec.Command(spec.Path, spec.Args...) //nolint:gosec // the program and its arguments are ours
	cmd.Env = append(environment(spec.Env), markerEnv+"="+marker)
	cmd.Dir = spec.Dir
	if cmd.Dir == "" {
		cmd.Dir = k.RunDir
	}
	cmd.Stdin = devNull
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startIn(cmd, spec); err != nil {
		return Process{}, fmt.Errorf("starting %s (%s): %w", spec.Name, spec.Path, err)
	}
	pid := cmd.Process.Pid
	// Reap the child when it exits so that it does not stay a zombie while we live, and keep
	// how it ended for the restart that notices.
	c := &child{done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		c.how = cmd.ProcessState.String()
		close(c.done)
	}()

	// exec(2) lets the starter go on before it has set up the new command line, which adoption
	// compares: wait for it, so that a lookup right after Start finds the process.
	waitExec(pid, spec.argv())

	started := time.Now().UTC().Round(0)
	var startTime uint64
	if st, err := readStat(pid); err == nil {
		startTime = st.StartTime
	}
	rec := spec.record(pid, startTime, started, h)
	c.startTime = rec.StartTime
	children.Store(pid, c)
	if err := k.writeRecord(spec.Name, rec); err != nil {
		_ = signalGroup(pid, syscall.SIGKILL)
		return Process{}, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Started process", "process", spec.Name, "pid", pid, "log", k.LogPath(spec.Name))
	return Process{Name: spec.Name, PID: pid, Argv: spec.argv(), Started: started, History: h}, nil
}

// adoptUnrecorded adopts, and records with history h, the process an earlier start of spec
// left running without a record (its starter died before writing it): a live process marked
// with this record's path (markerEnv) that runs spec's command line. It reports false when there
// is none.
func (k Keeper) adoptUnrecorded(ctx context.Context, spec Spec, marker string, h History) (Process, bool, error) {
	pid, st, ok := findMarked(marker, spec.argv())
	if !ok {
		return Process{}, false, nil
	}
	rec := spec.record(pid, st.StartTime, time.Now().UTC().Round(0), h)
	if err := k.writeRecord(spec.Name, rec); err != nil {
		return Process{}, true, err
	}
	ctrl.LoggerFrom(ctx).Info("Adopted a process whose start was never recorded (its starter stopped before it could)", "process", spec.Name, "pid", pid)
	return rec.process(spec.Name, true), true, nil
}

// waitExec waits, up to a second, until pid shows argv as its command line or exits.
func waitExec(pid int, argv []string) {
	deadline := time.Now().Add(time.Second)
	for delay := 100 * time.Microsecond; time.Now().Before(deadline); delay = min(2*delay, 10*time.Millisecond) {
		current, err := Cmdline(pid)
		if err != nil || slices.Equal(current, argv) || !Alive(pid) {
			return
		}
		time.Sleep(delay)
	}
}

func (k Keeper) openLog(spec Spec) (*os.File, error) {
	path := k.LogPath(spec.Name)
	if info, err := os.Stat(path); err == nil && info.Size() > maxLogSize {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", spec.Name, err)
	}
	fmt.Fprintf(f, "==> %s starting %s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(spec.argv(), " "))
	return f, nil
}

func environment(extra []string) []string {
	env := make([]string, 0, len(inheritedEnv)+len(extra))
	for _, key := range inheritedEnv {
		if v, ok := os.LookupEnv(key); ok {
			env = append(env, key+"="+v)
		}
	}
	return append(env, extra...)
}
