package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// DefaultStopTimeout is how long Stop waits after SIGTERM before it sends SIGKILL.
const DefaultStopTimeout = 10 * time.Second

// Stop stops the process recorded under name, if it is alive and ours: SIGTERM to its process
// group, up to timeout for it to exit, then SIGKILL. It removes the pid file and record, so that
// nothing starts the process again (Keep needs the record). A process that is not running is not
// an error. Callers that share RunDir with another program hold Lock.
func (k Keeper) Stop(ctx context.Context, name string, timeout time.Duration) error {
	rec, ours := k.lookup(name)
	if !ours {
		return k.forget(name)
	}
	return k.stop(ctx, name, rec, timeout)
}

// StopAll stops, in reverse name order, every process that has a pid file in RunDir. Callers
// that need an order (clients before servers) call Stop for each name instead.
func (k Keeper) StopAll(ctx context.Context, timeout time.Duration) error {
	names, err := k.Names()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range slices.Backward(names) {
		errs = append(errs, k.Stop(ctx, name, timeout))
	}
	return errors.Join(errs...)
}

func (k Keeper) stop(ctx context.Context, name string, rec record, timeout time.Duration) error {
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
	return k.forget(name)
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

// forget removes the pid file and record of name.
func (k Keeper) forget(name string) error {
	var errs []error
	for _, path := range []string{k.PIDPath(name), k.recordPath(name)} {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}
