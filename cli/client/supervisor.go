package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

// SupervisedDirs are the directories of home whose recorded processes its supervisor keeps
// running: every local cluster's (its control plane, and a management cluster's manager) and the
// embedded registry's.
func SupervisedDirs(home string) []string {
	return []string{controlplane.ClusterDir(home, "*"), registryHome(home)}
}

// SupervisorSpec is the command that runs the supervisor of home: `flotilla supervisor --home
// HOME`, with executable the flotilla binary.
func SupervisorSpec(executable, home string) process.Spec {
	return process.Spec{Path: executable, Args: []string{"supervisor", "--home", home}}
}

// forgiveFailures forgets the failures of every process recorded in the home (process.Keeper
// Forgive), each directory under its lock: `flotilla start` starts what exited at once, whatever
// its back-off said, and judges it by how it runs from now on, not by the kills of a machine
// restart or the failures that led a user to run it.
func (c *Client) forgiveFailures(ctx context.Context) error {
	keepers, err := supervisor.Supervised(SupervisedDirs(c.Home))
	errs := []error{err}
	for _, keeper := range keepers {
		errs = append(errs, forgiveDir(ctx, keeper))
	}
	return errors.Join(errs...)
}

// forgiveDir forgives every process recorded by keeper, under its lock; a directory removed
// meanwhile has nothing to forgive.
func forgiveDir(ctx context.Context, keeper process.Keeper) error {
	unlock, ok, err := keeper.LockExisting(ctx)
	if err != nil || !ok {
		return err
	}
	defer unlock()
	names, err := keeper.Names()
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		errs = append(errs, keeper.Forgive(name))
	}
	return errors.Join(errs...)
}

// EnsureSupervisor starts the supervisor of the home unless one runs. Commands call it after
// they recorded (started) processes: see supervisor.Ensure.
func (c *Client) EnsureSupervisor(ctx context.Context) error {
	pid, err := supervisor.Ensure(ctx, c.Home, SupervisorSpec(c.Executable, c.Home))
	if err != nil {
		return err
	}
	if pid != 0 {
		fmt.Fprintf(c.Out, "Started the supervisor of %s (pid %d): it restarts the processes of local clusters that exit\n", c.Home, pid)
	}
	return nil
}

// stopIdleSupervisor stops the supervisor of the home when a command removed the last process it
// had to supervise (see supervisor.StopIfIdle), so that nothing of Flotilla's is left running.
func (c *Client) stopIdleSupervisor(ctx context.Context) error {
	pid, err := supervisor.StopIfIdle(ctx, c.Home, SupervisedDirs(c.Home))
	if err != nil {
		return fmt.Errorf("stopping the supervisor of %s: %w", c.Home, err)
	}
	if pid != 0 {
		fmt.Fprintf(c.Out, "Stopped the supervisor of %s (pid %d): nothing is left to supervise\n", c.Home, pid)
	}
	return nil
}

// ensureLocked is process.Keeper.Ensure under the lock of keeper's run directory, which the
// supervisor of the home takes too.
func ensureLocked(ctx context.Context, keeper process.Keeper, spec process.Spec) (process.Process, error) {
	unlock, err := keeper.Lock(ctx)
	if err != nil {
		return process.Process{}, err
	}
	defer unlock()
	return keeper.Ensure(ctx, spec)
}

// stopLocked is process.Keeper.Stop under the lock of keeper's run directory: the supervisor
// cannot start the process again between its exit and the removal of its record.
func stopLocked(ctx context.Context, keeper process.Keeper, name string) error {
	unlock, err := keeper.Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return keeper.Stop(ctx, name, process.DefaultStopTimeout)
}

// waitProcess polls ready every interval until it succeeds or timeout passes, while the process
// recorded in keeper under name may exit and be started again by the supervisor; it fails early,
// with the end of the process's log, once the process crash loops or is no longer recorded.
// what names the process in errors ("the manager of mgmt").
func waitProcess(ctx context.Context, keeper process.Keeper, name, what string, timeout, interval time.Duration, ready func(context.Context) error) error {
	var lastErr error
	return poll(ctx, interval, timeout, func(ctx context.Context) (bool, error) {
		p, recorded := keeper.Inspect(name)
		switch {
		case !recorded:
			return false, fmt.Errorf("%s is not running (it was stopped); the end of its log:\n%s", what, keeper.LogTail(name, 20))
		case p.History.CrashLooping(p.PID != 0, p.Started, time.Now()):
			return false, fmt.Errorf("%s keeps exiting (%d times in a row, last: %s); the end of %s:\n%s",
				what, p.History.Failures, p.History.LastExit, keeper.LogPath(name), keeper.LogTail(name, 20))
		case p.PID == 0:
			lastErr = fmt.Errorf("%s exited (%s); the supervisor starts it again", what, p.History.LastExit)
			return false, nil
		}
		lastErr = ready(ctx)
		return lastErr == nil, nil
	}, func() error {
		return fmt.Errorf("%s is not ready after %s (%v); see %s", what, timeout, lastErr, keeper.LogPath(name))
	})
}
