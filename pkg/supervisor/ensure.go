package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

// startTimeout bounds how long Ensure waits for a supervisor it started to take the lock.
const startTimeout = 10 * time.Second

// processName is the supervisor's name in its own process.Keeper.
const processName = "supervisor"

// Running reports whether a supervisor runs for home: one holds its lock.
func Running(home string) bool {
	f, err := os.OpenFile(lockPath(home), os.O_RDWR, 0o600)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	return errors.Is(err, syscall.EWOULDBLOCK)
}

// Ensure starts the supervisor of home, as the program spec describes (such as `flotilla
// supervisor --home HOME`), unless one runs, and waits until it holds the lock of the home. It
// returns the pid of the supervisor it started, or 0 when one was running.
//
// Callers record their processes first and call Ensure after: a supervisor that finds nothing to
// supervise exits, and the order guarantees that either it sees the new record or Ensure sees it
// gone (see Run).
func Ensure(ctx context.Context, home string, spec process.Spec) (int, error) {
	keeper := own(home)
	unlock, err := keeper.Lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	if Running(home) {
		return 0, nil
	}
	// A supervisor that is starting, or one that is exiting idle, runs without the lock; the
	// first takes it within a moment, the second is gone within a moment.
	if pid, running := keeper.Running(processName); running {
		if waitHeld(ctx, home, pid) {
			return 0, nil
		}
	}
	spec.Name = processName
	p, err := keeper.Start(ctx, spec)
	if err != nil {
		return 0, fmt.Errorf("starting the supervisor: %w", err)
	}
	if !waitHeld(ctx, home, p.PID) {
		return 0, fmt.Errorf("the supervisor (pid %d) did not start supervising; the end of %s:\n%s", p.PID, keeper.LogPath(processName), keeper.LogTail(processName, 20))
	}
	return p.PID, nil
}

// waitHeld waits up to startTimeout until a supervisor holds the lock of home, and reports
// whether one does; it gives up early when pid exits.
func waitHeld(ctx context.Context, home string, pid int) bool {
	deadline := time.Now().Add(startTimeout)
	for !Running(home) {
		if !process.Alive(pid) || time.Now().After(deadline) || ctx.Err() != nil {
			return Running(home)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// Stop stops the supervisor of home that Ensure started, if it runs. The processes it supervises
// keep running, unsupervised.
func Stop(ctx context.Context, home string) error {
	keeper := own(home)
	unlock, err := keeper.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return keeper.Stop(ctx, processName, process.DefaultStopTimeout)
}

// StopIfIdle stops the supervisor of home that Ensure started when nothing is recorded in the
// directories the glob patterns dirs match (its Options.Dirs), and returns its pid; 0 when it
// stopped none. A command that removed the last process of a home (`flotilla delete cluster` of
// its last cluster, no registry running) calls it, and leaves no Flotilla process behind rather
// than the supervisor until its idle exit. It holds the lock under which Ensure starts a
// supervisor, and commands record a process before they call Ensure: either StopIfIdle sees the
// record and stops nothing, or that Ensure starts a new supervisor after it. A supervisor that
// Ensure did not start (`flotilla supervisor` in a terminal, or from systemd) is left running, as
// is one whose home is gone.
func StopIfIdle(ctx context.Context, home string, dirs []string) (int, error) {
	keeper := own(home)
	unlock, ok, err := keeper.LockExisting(ctx)
	if err != nil || !ok {
		return 0, err
	}
	defer unlock()
	pid, running := keeper.Running(processName)
	if !running {
		return 0, nil
	}
	if n, err := recorded(dirs); err != nil || n > 0 {
		return 0, err
	}
	if err := keeper.Stop(ctx, processName, process.DefaultStopTimeout); err != nil {
		return 0, fmt.Errorf("stopping the supervisor (pid %d): %w", pid, err)
	}
	return pid, nil
}

// PID returns the pid of the supervisor Ensure started, when it runs.
func PID(home string) (int, bool) {
	return own(home).Running(processName)
}
