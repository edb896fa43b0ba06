package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// Process is a process of a Keeper.
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

// Keeper starts, adopts and stops processes, keeping pid files and records in RunDir and
// logs in LogDir. The zero value is not usable; both directories must be set.
type Keeper struct {
	// RunDir holds <name>.pid and <name>.json.
	RunDir string
	// LogDir holds <name>.log.
	LogDir string
}

// InDir returns the Keeper of dir, which keeps its pid files and records in dir/run and its
// logs in dir/logs: how every Flotilla directory with processes (a local cluster's, the
// registry's, the supervisor daemon's own) lays them out.
func InDir(dir string) Keeper {
	return Keeper{RunDir: filepath.Join(dir, "run"), LogDir: filepath.Join(dir, "logs")}
}

// PIDPath returns the pid file of name.
func (k Keeper) PIDPath(name string) string { return filepath.Join(k.RunDir, name+".pid") }

// LogPath returns the log file of name.
func (k Keeper) LogPath(name string) string { return filepath.Join(k.LogDir, name+".log") }

// Ensure makes spec run: it adopts the process recorded under spec.Name when that process is
// alive and was started with exactly spec's command line and Env, stops it when it is ours but
// was started differently, and starts spec when nothing of ours runs. A process that was
// started with spec's command line and exited is started again under the restart policy (see
// Keep). It never starts a second copy of a process it adopted and never signals a process it
// did not start. Callers that share RunDir with another program hold Lock.
func (k Keeper) Ensure(ctx context.Context, spec Spec) (Process, error) {
	if err := spec.validate(); err != nil {
		return Process{}, err
	}
	rec, why := k.check(spec.Name)
	switch {
	case why == "" && rec.runs(spec):
		return rec.process(spec.Name, true), nil
	case why == "":
		ctrl.LoggerFrom(ctx).Info("Restarting process with a changed command line or environment", "process", spec.Name, "pid", rec.PID)
		if err := k.stop(ctx, spec.Name, rec, DefaultStopTimeout); err != nil {
			return Process{}, err
		}
	case rec.recorded() && rec.runs(spec):
		return k.restart(ctx, spec, rec)
	case rec.PID != 0:
		ctrl.LoggerFrom(ctx).V(1).Info("Ignoring stale pid file", "process", spec.Name, "pid", rec.PID, "reason", why)
	}
	return k.start(ctx, spec, History{})
}

// Keep makes the process recorded under name run again when it has exited, from its record,
// under the restart policy: a process that ran for StableAfter is started at once; one that
// failed waits BackOff(failures) after it was noticed, and until then Keep returns it with PID 0.
// A start that fails (a port in use, a program gone) counts as a failure too: its error is
// returned with the process, PID 0 and the failure in its history. A running process is returned
// as adopted. Callers that share RunDir with another
// program hold Lock.
func (k Keeper) Keep(ctx context.Context, name string) (Process, error) {
	rec, why := k.check(name)
	if why == "" {
		return rec.process(name, true), nil
	}
	if !rec.recorded() {
		return Process{}, fmt.Errorf("process %s: %s, nothing to start again", name, why)
	}
	return k.restart(ctx, rec.spec(name), rec)
}

// Forgive forgets the failures of the process recorded under name (History.Failures and the
// back-off they set), so that it starts at once and does not count as crash looping until it
// fails again: what a user's explicit start means, as `systemctl reset-failed` does. An exit
// nobody has noticed yet (the process was killed with the machine, say) is recorded now, and
// forgiven too, rather than counted at the next start. Its restarts and last exit stay.
// Nothing recorded is nothing to forgive. Callers that share RunDir with another program hold
// Lock.
func (k Keeper) Forgive(name string) error {
	rec, why := k.check(name)
	if !rec.recorded() {
		return nil
	}
	h := rec.History
	switch {
	case why != "" && h.ExitedAt.IsZero():
		h = h.Exited(exitOf(rec), 0, time.Now().UTC().Round(0))
	case h.Failures == 0:
		return nil
	}
	h.Failures, h.NextStart = 0, time.Time{}
	rec.History = h
	return k.writeRecord(name, rec)
}

// Inspect returns the process recorded under name, with PID 0 when it does not run, and false
// when nothing is recorded. It reads and changes nothing else.
func (k Keeper) Inspect(name string) (Process, bool) {
	rec, why := k.check(name)
	if !rec.recorded() {
		return Process{}, false
	}
	p := rec.process(name, true)
	if why != "" {
		p.PID, p.Adopted = 0, false
	}
	return p, true
}

// Differs reports whether Ensure would restart spec: a process of ours runs under spec.Name,
// but was started with another command line or Env.
func (k Keeper) Differs(spec Spec) bool {
	rec, why := k.check(spec.Name)
	return why == "" && !rec.runs(spec)
}

// Running returns the pid of the process recorded under name when it is alive and ours,
// whatever its command line.
func (k Keeper) Running(name string) (int, bool) {
	rec, ours := k.lookup(name)
	return rec.PID, ours
}

// Names returns the names that have a pid file in RunDir, sorted.
func (k Keeper) Names() ([]string, error) {
	entries, err := os.ReadDir(k.RunDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", k.RunDir, err)
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

// LogTail returns at most the last n lines of name's log, for error messages.
func (k Keeper) LogTail(name string, n int) string {
	data, err := os.ReadFile(k.LogPath(name))
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
