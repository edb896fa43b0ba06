package process

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
)

// DefaultStopTimeout is how long Stop waits after SIGTERM before it sends SIGKILL.
const DefaultStopTimeout = 10 * time.Second

// maxLogSize is the size past which a log file is rotated to <name>.log.1 before a start.
const maxLogSize = 10 << 20

// inheritedEnv lists the variables of the starter's environment a process inherits; the rest
// of its environment is Spec.Env. A small, fixed environment keeps a process independent of
// where it was started from (a shell with KUBECONFIG set, a manager Pod, a test).
var inheritedEnv = []string{"PATH", "HOME", "USER", "TMPDIR", "LANG", "TZ"}

// Spec describes a process to run.
type Spec struct {
	// Name identifies the process within its Supervisor: run/<Name>.pid, logs/<Name>.log.
	Name string
	// Path is the absolute path of the program. The program must keep the command line it was
	// started with (not exec another program, not rewrite its argv): adoption compares it.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env is added to the inherited PATH, HOME, USER, TMPDIR, LANG and TZ, as KEY=value.
	// Changing Path, Args or Env restarts the process.
	Env []string
	// Dir is the working directory; empty means the Supervisor's RunDir.
	Dir string
	// Ports are the addresses (host:port) the process listens on. A start waits a moment for
	// them to be free and otherwise fails with a PortInUseError, so that a port another program
	// took is reported as such rather than as a crash.
	Ports []string
	// Namespaces are the paths of namespaces the process runs in (files such as
	// /run/netns/<name> that keep a namespace, of any type); for each type not among them,
	// this program's. A process in a user namespace is started through util-linux's nsenter,
	// as the namespace's root.
	Namespaces []string
	// Cgroup is the directory of a cgroup v2 group the process starts in (see Cgroup2Root), so
	// that it and everything it starts can be found and killed together; empty: this
	// program's. Changing Namespaces or Cgroup restarts the process.
	Cgroup string
}

// argv is the command line the Spec runs.
func (s Spec) argv() []string {
	return append([]string{s.Path}, s.Args...)
}

// Process is a process of a Supervisor.
type Process struct {
	// Name is the Spec name.
	Name string
	// PID is the process id; 0 when the process does not run because it waits out its back-off
	// (History.NextStart says until when).
	PID int
	// Adopted is true when the process was already running and was taken over, false when it
	// was started by this call.
	Adopted bool
	// Restarted is true when this call started the process again after it had exited.
	Restarted bool
	// Argv is the command line it was started with, the program first.
	Argv []string
	// Started is when the process last started.
	Started time.Time
	// History counts its exits and restarts.
	History History
}

// Supervisor starts, adopts and stops processes, keeping pid files and records in RunDir and
// logs in LogDir. The zero value is not usable; both directories must be set.
type Supervisor struct {
	// RunDir holds <name>.pid and <name>.json.
	RunDir string
	// LogDir holds <name>.log.
	LogDir string
}

// InDir returns the Supervisor of dir, which keeps its pid files and records in dir/run and its
// logs in dir/logs: how every Flotilla directory with processes (a local cluster's, the
// registry's, the supervisor daemon's own) lays them out.
func InDir(dir string) Supervisor {
	return Supervisor{RunDir: filepath.Join(dir, "run"), LogDir: filepath.Join(dir, "logs")}
}

// record is what the supervisor remembers about a process it started, in <name>.json. It stays
// after the process exits, until Stop: it is what Keep starts again.
type record struct {
	PID        int      `json:"pid"`
	Argv       []string `json:"argv"`
	Env        []string `json:"env,omitempty"`
	Dir        string   `json:"dir,omitempty"`
	Ports      []string `json:"ports,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
	Cgroup     string   `json:"cgroup,omitempty"`
	StartTime  uint64   `json:"startTime"`
	Started    string   `json:"started"`
	History    History  `json:"history,omitzero"`
}

// record is the record of spec's process pid, started at started (kernel start time startTime),
// with history h.
func (s Spec) record(pid int, startTime uint64, started time.Time, h History) record {
	return record{PID: pid, Argv: s.argv(), Env: s.Env, Dir: s.Dir, Ports: s.Ports, Namespaces: s.Namespaces,
		Cgroup: s.Cgroup, StartTime: startTime, Started: started.Format(time.RFC3339Nano), History: h}
}

// spec returns the Spec the record was started from.
func (rec record) spec(name string) Spec {
	return Spec{Name: name, Path: rec.Argv[0], Args: rec.Argv[1:], Env: rec.Env, Dir: rec.Dir, Ports: rec.Ports,
		Namespaces: rec.Namespaces, Cgroup: rec.Cgroup}
}

// recorded reports whether rec is a readable record of a start.
func (rec record) recorded() bool { return rec.PID > 0 && len(rec.Argv) > 0 }

// started returns when the recorded process started; zero when unknown.
func (rec record) started() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, rec.Started)
	return t
}

// PIDPath returns the pid file of name.
func (s Supervisor) PIDPath(name string) string { return filepath.Join(s.RunDir, name+".pid") }

// LogPath returns the log file of name.
func (s Supervisor) LogPath(name string) string { return filepath.Join(s.LogDir, name+".log") }

func (s Supervisor) recordPath(name string) string { return filepath.Join(s.RunDir, name+".json") }

// Ensure makes spec run: it adopts the process recorded under spec.Name when that process is
// alive and was started with exactly spec's command line and Env, stops it when it is ours but
// was started differently, and starts spec when nothing of ours runs. A process that was
// started with spec's command line and exited is started again under the restart policy (see
// Keep). It never starts a second copy of a process it adopted and never signals a process it
// did not start. Callers that share RunDir with another program hold Lock.
func (s Supervisor) Ensure(ctx context.Context, spec Spec) (Process, error) {
	if err := spec.validate(); err != nil {
		return Process{}, err
	}
	rec, why := s.check(spec.Name)
	switch {
	case why == "" && rec.runs(spec):
		return rec.process(spec.Name, true), nil
	case why == "":
		ctrl.LoggerFrom(ctx).Info("Restarting process with a changed command line or environment", "process", spec.Name, "pid", rec.PID)
		if err := s.stop(ctx, spec.Name, rec, DefaultStopTimeout); err != nil {
			return Process{}, err
		}
	case rec.recorded() && rec.runs(spec):
		return s.restart(ctx, spec, rec)
	case rec.PID != 0:
		ctrl.LoggerFrom(ctx).V(1).Info("Ignoring stale pid file", "process", spec.Name, "pid", rec.PID, "reason", why)
	}
	return s.start(ctx, spec, History{})
}

// Keep makes the process recorded under name run again when it has exited, from its record,
// under the restart policy: a process that ran for StableAfter is started at once; one that
// failed waits BackOff(failures) after it was noticed, and until then Keep returns it with PID 0.
// A start that fails (a port in use, a program gone) counts as a failure too: its error is
// returned with the process, PID 0 and the failure in its history. A running process is returned
// as adopted. Callers that share RunDir with another
// program hold Lock.
func (s Supervisor) Keep(ctx context.Context, name string) (Process, error) {
	rec, why := s.check(name)
	if why == "" {
		return rec.process(name, true), nil
	}
	if !rec.recorded() {
		return Process{}, fmt.Errorf("process %s: %s, nothing to start again", name, why)
	}
	return s.restart(ctx, rec.spec(name), rec)
}

// Forgive forgets the failures of the process recorded under name (History.Failures and the
// back-off they set), so that it starts at once and does not count as crash looping until it
// fails again: what a user's explicit start means, as `systemctl reset-failed` does. An exit
// nobody has noticed yet (the process was killed with the machine, say) is recorded now, and
// forgiven too, rather than counted at the next start. Its restarts and last exit stay.
// Nothing recorded is nothing to forgive. Callers that share RunDir with another program hold
// Lock.
func (s Supervisor) Forgive(name string) error {
	rec, why := s.check(name)
	if !rec.recorded() {
		return nil
	}
	h := rec.History
	switch {
	case why != "" && h.ExitedAt.IsZero():
		h = h.exited(exitOf(rec), 0, time.Now().UTC().Round(0))
	case h.Failures == 0:
		return nil
	}
	h.Failures, h.NextStart = 0, time.Time{}
	rec.History = h
	return s.writeRecord(name, rec)
}

// Inspect returns the process recorded under name, with PID 0 when it does not run, and false
// when nothing is recorded. It reads and changes nothing else.
func (s Supervisor) Inspect(name string) (Process, bool) {
	rec, why := s.check(name)
	if !rec.recorded() {
		return Process{}, false
	}
	p := rec.process(name, true)
	if why != "" {
		p.PID, p.Adopted = 0, false
	}
	return p, true
}

// restart starts spec, which ran as rec and exited, unless its back-off says to wait. The first
// call after the exit records it in the history.
func (s Supervisor) restart(ctx context.Context, spec Spec, rec record) (Process, error) {
	log := ctrl.LoggerFrom(ctx)
	now := time.Now().UTC().Round(0) // as read back from the record: no monotonic reading
	h := rec.History
	if h.ExitedAt.IsZero() {
		h = h.exited(exitOf(rec), now.Sub(rec.started()), now)
		rec.History = h
		if err := s.writeRecord(spec.Name, rec); err != nil {
			return Process{}, err
		}
		log.Info("Process exited", "process", spec.Name, "pid", rec.PID, "exit", h.LastExit, "failures", h.Failures, "nextStart", h.NextStart.Sub(now).Round(time.Millisecond).String())
	}
	if now.Before(h.NextStart) {
		return Process{Name: spec.Name, Argv: rec.Argv, Started: rec.started(), History: h}, nil
	}
	next := h
	next.Restarts++
	next.ExitedAt, next.NextStart = time.Time{}, time.Time{}
	p, err := s.start(ctx, spec, next)
	if err != nil {
		rec.History = h.startFailed(err, time.Now().UTC().Round(0))
		if werr := s.writeRecord(spec.Name, rec); werr != nil {
			return Process{}, errors.Join(err, werr)
		}
		return Process{Name: spec.Name, Argv: rec.Argv, Started: rec.started(), History: rec.History}, err
	}
	p.Restarted = !p.Adopted
	return p, nil
}

// process returns the Process rec describes.
func (rec record) process(name string, adopted bool) Process {
	return Process{Name: name, PID: rec.PID, Adopted: adopted, Argv: rec.Argv, Started: rec.started(), History: rec.History}
}

// Differs reports whether Ensure would restart spec: a process of ours runs under spec.Name,
// but was started with another command line or Env.
func (s Supervisor) Differs(spec Spec) bool {
	rec, why := s.check(spec.Name)
	return why == "" && !rec.runs(spec)
}

// runs reports whether the recorded process was started as spec.
func (rec record) runs(spec Spec) bool {
	return slices.Equal(rec.Argv, spec.argv()) && slices.Equal(rec.Env, spec.Env) &&
		slices.Equal(rec.Namespaces, spec.Namespaces) && rec.Cgroup == spec.Cgroup
}

// Start starts spec unconditionally, detached from the caller (see the package documentation),
// and records it with an empty history. Use Ensure unless the caller has just checked that
// nothing runs.
func (s Supervisor) Start(ctx context.Context, spec Spec) (Process, error) {
	if err := spec.validate(); err != nil {
		return Process{}, err
	}
	return s.start(ctx, spec, History{})
}

// start starts spec once its ports are free, and records it with history h.
func (s Supervisor) start(ctx context.Context, spec Spec, h History) (Process, error) {
	for _, dir := range []string{s.RunDir, s.LogDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return Process{}, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	marker, err := filepath.Abs(s.recordPath(spec.Name))
	if err != nil {
		return Process{}, fmt.Errorf("locating the record of %s: %w", spec.Name, err)
	}
	if p, ok, err := s.adoptUnrecorded(ctx, spec, marker, h); ok || err != nil {
		return p, err
	}
	if err := CheckPorts(ctx, spec); err != nil {
		return Process{}, err
	}
	logFile, err := s.openLog(spec)
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
		cmd.Dir = s.RunDir
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
	if err := s.writeRecord(spec.Name, rec); err != nil {
		_ = signalGroup(pid, syscall.SIGKILL)
		return Process{}, err
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Started process", "process", spec.Name, "pid", pid, "log", s.LogPath(spec.Name))
	return Process{Name: spec.Name, PID: pid, Argv: spec.argv(), Started: started, History: h}, nil
}

// adoptUnrecorded adopts, and records with history h, the process an earlier start of spec
// left running without a record (its starter died before writing it): a live process marked
// with this record's path (markerEnv) that runs spec's command line. It reports false when there
// is none.
func (s Supervisor) adoptUnrecorded(ctx context.Context, spec Spec, marker string, h History) (Process, bool, error) {
	pid, st, ok := findMarked(marker, spec.argv())
	if !ok {
		return Process{}, false, nil
	}
	rec := spec.record(pid, st.StartTime, time.Now().UTC().Round(0), h)
	if err := s.writeRecord(spec.Name, rec); err != nil {
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

// Running returns the pid of the process recorded under name when it is alive and ours,
// whatever its command line.
func (s Supervisor) Running(name string) (int, bool) {
	rec, ours := s.lookup(name)
	return rec.PID, ours
}

// Names returns the names that have a pid file in RunDir, sorted.
func (s Supervisor) Names() ([]string, error) {
	entries, err := os.ReadDir(s.RunDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.RunDir, err)
	}
	var names []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".pid"); ok && !e.IsDir() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Stop stops the process recorded under name, if it is alive and ours: SIGTERM to its process
// group, up to timeout for it to exit, then SIGKILL. It removes the pid file and record, so that
// nothing starts the process again (Keep needs the record). A process that is not running is not
// an error. Callers that share RunDir with another program hold Lock.
func (s Supervisor) Stop(ctx context.Context, name string, timeout time.Duration) error {
	rec, ours := s.lookup(name)
	if !ours {
		return s.forget(name)
	}
	return s.stop(ctx, name, rec, timeout)
}

// StopAll stops, in reverse name order, every process that has a pid file in RunDir. Callers
// that need an order (clients before servers) call Stop for each name instead.
func (s Supervisor) StopAll(ctx context.Context, timeout time.Duration) error {
	names, err := s.Names()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range slices.Backward(names) {
		errs = append(errs, s.Stop(ctx, name, timeout))
	}
	return errors.Join(errs...)
}

// LogTail returns at most the last n lines of name's log, for error messages.
func (s Supervisor) LogTail(name string, n int) string {
	data, err := os.ReadFile(s.LogPath(name))
	if err != nil {
		return ""
	}
	const maxBytes = 64 << 10
	if len(data) > maxBytes {
		data = data[len(data)-maxBytes:]
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s Supervisor) stop(ctx context.Context, name string, rec record, timeout time.Duration) error {
	log := ctrl.LoggerFrom(ctx)
	if err := signalGroup(rec.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping %s (pid %d): %w", name, rec.PID, err)
	}
	if !waitExit(ctx, rec, timeout) {
		log.Info("Process did not exit after SIGTERM, killing it", "process", name, "pid", rec.PID, "timeout", timeout)
		if err := signalGroup(rec.PID, syscall.SIGKILL); err != nil {
			return fmt.Errorf("killing %s (pid %d): %w", name, rec.PID, err)
		}
		if !waitExit(ctx, rec, 5*time.Second) {
			return fmt.Errorf("stopping %s: pid %d still runs after SIGKILL", name, rec.PID)
		}
	}
	children.Delete(rec.PID)
	log.V(1).Info("Stopped process", "process", name, "pid", rec.PID)
	return s.forget(name)
}

// waitExit polls until the recorded process has finished exiting (Gone: its ports are free
// again), timeout passes or ctx ends.
func waitExit(ctx context.Context, rec record, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 100*time.Millisecond) {
		if Gone(rec.PID) || !sameStart(rec) {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(delay)
	}
}

// lookup reads the record of name and reports whether it describes a live process of ours.
func (s Supervisor) lookup(name string) (record, bool) {
	rec, why := s.check(name)
	return rec, why == ""
}

// check reads the record of name and returns why it does not describe a live process of ours,
// or "" when it does.
func (s Supervisor) check(name string) (record, string) {
	pid, err := readPIDFile(s.PIDPath(name))
	if err != nil {
		return record{}, "no pid file"
	}
	data, err := os.ReadFile(s.recordPath(name))
	if err != nil {
		return record{PID: pid}, "no record"
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil || rec.PID != pid {
		return record{PID: pid}, "record does not match the pid file"
	}
	return rec, whyNotSame(rec)
}

// whyNotSame returns why the process rec describes no longer runs, or "": a new process with the
// same pid, a zombie, another command line or another executable.
func whyNotSame(rec record) string {
	if len(rec.Argv) == 0 {
		return "empty record"
	}
	st, err := readStat(rec.PID)
	switch {
	case err != nil:
		return "no such process"
	case st.State == 'Z' || st.State == 'X' || st.State == 'x':
		return "exited (zombie)"
	case rec.StartTime != 0 && st.StartTime != rec.StartTime:
		return "pid reused by another process"
	}
	argv, err := Cmdline(rec.PID)
	if err != nil || !slices.Equal(argv, rec.Argv) {
		return fmt.Sprintf("pid runs another command line %q", argv)
	}
	if !exeMatches(rec.PID, rec.Argv[0]) {
		exe, _ := Exe(rec.PID)
		return "pid runs another program " + exe
	}
	return ""
}

// sameStart reports whether rec.PID is still the process rec recorded (not a new process that
// reuses the pid), whatever its state.
func sameStart(rec record) bool {
	st, err := readStat(rec.PID)
	return err == nil && (rec.StartTime == 0 || st.StartTime == rec.StartTime)
}

// exeMatches reports whether pid runs program. An unreadable exe link (another user's process)
// defers to the command line, which already matched.
func exeMatches(pid int, program string) bool {
	exe, err := Exe(pid)
	if err != nil {
		return errors.Is(err, fs.ErrPermission)
	}
	if exe == program {
		return true
	}
	resolved, err := filepath.EvalSymlinks(program)
	if err != nil {
		// The program was removed or replaced since the start; the kernel still names it.
		return false
	}
	return exe == resolved
}

func (s Supervisor) writeRecord(name string, rec record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding record of %s: %w", name, err)
	}
	if err := atomicfile.Write(s.recordPath(name), append(data, '\n')); err != nil {
		return err
	}
	return atomicfile.Write(s.PIDPath(name), []byte(strconv.Itoa(rec.PID)+"\n"))
}

// forget removes the pid file and record of name.
func (s Supervisor) forget(name string) error {
	var errs []error
	for _, path := range []string{s.PIDPath(name), s.recordPath(name)} {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

func (s Supervisor) openLog(spec Spec) (*os.File, error) {
	path := s.LogPath(spec.Name)
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

func (s Spec) validate() error {
	switch {
	case s.Name == "" || strings.ContainsAny(s.Name, `/\`):
		return fmt.Errorf("process name %q: must be a non-empty file name", s.Name)
	case !filepath.IsAbs(s.Path):
		return fmt.Errorf("process %s: program path %q must be absolute", s.Name, s.Path)
	}
	return nil
}

func readPIDFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(data, []byte{'\n'})
	pid, err := strconv.Atoi(strings.TrimSpace(string(line)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: invalid content %q", path, line)
	}
	return pid, nil
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
