package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

// Defaults of Options.
const (
	// DefaultInterval is how often the supervisor looks at every recorded process.
	DefaultInterval = time.Second
	// DefaultIdleExit is how long the supervisor stays with nothing to supervise before it exits.
	DefaultIdleExit = 10 * time.Second
)

// Options configure Run.
type Options struct {
	// Home is the Flotilla home; the supervisor's own files are in Dir(Home).
	Home string
	// Dirs are glob patterns of the directories whose run/ and logs/ hold the records of the
	// processes to keep running (process.InDir(<dir>): <dir>/run and <dir>/logs).
	Dirs []string
	// Interval is how often every recorded process is looked at; DefaultInterval when 0.
	Interval time.Duration
	// Prepare, when set, runs under a directory's lock before processes of it are started again:
	// it restores what they need that a restart of the machine removed (a control plane's
	// cgroup and egress rules: controlplane.Prepare). When it fails, none is started.
	Prepare func(ctx context.Context, dir string) error
	// IdleExit is how long the supervisor runs with no process recorded before it exits;
	// negative never exits, 0 means DefaultIdleExit.
	IdleExit time.Duration
}

// Dir is where the supervisor of home keeps its lock, pid file and log: home/supervisor.
func Dir(home string) string { return filepath.Join(home, "supervisor") }

// lockPath is the file the running supervisor of home holds locked.
func lockPath(home string) string { return filepath.Join(Dir(home), "supervisor.lock") }

// own is the process.Keeper of the supervisor itself: its pid file, record and log, and the
// lock under which clients start it.
func own(home string) process.Keeper {
	return process.InDir(Dir(home))
}

// daemon is one running supervisor.
type daemon struct {
	o   Options
	log logr.Logger
	// held is the locked lock file while this supervisor is the active one.
	held *os.File
	// busy holds the directories whose processes a goroutine is starting.
	busy sync.Map
}

// Run runs the supervisor of o.Home until ctx ends, or until nothing has been recorded for
// o.IdleExit. While another supervisor of the same home runs, it waits, and takes over when that
// one exits. It returns nil when ctx ends or it exits idle.
func Run(ctx context.Context, o Options) error {
	if o.Home == "" || len(o.Dirs) == 0 {
		return errors.New("supervisor: Home and Dirs must be set")
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.IdleExit == 0 {
		o.IdleExit = DefaultIdleExit
	}
	d := &daemon{o: o, log: ctrl.LoggerFrom(ctx).WithName("supervisor")}
	if err := d.acquire(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer d.release()
	d.log.Info("Supervising", "home", o.Home, "pid", os.Getpid())

	idleSince := time.Now()
	ticker := time.NewTicker(o.Interval)
	defer ticker.Stop()
	for {
		if d.keepAll(ctx) > 0 {
			idleSince = time.Now()
		} else if o.IdleExit > 0 && time.Since(idleSince) >= o.IdleExit {
			if d.exitIdle(ctx) {
				d.log.Info("Nothing left to supervise, exiting", "idle", o.IdleExit)
				return nil
			}
			idleSince = time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// acquire takes the lock of the home, waiting while another supervisor holds it.
func (d *daemon) acquire(ctx context.Context) error {
	if err := os.MkdirAll(Dir(d.o.Home), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", Dir(d.o.Home), err)
	}
	waiting := false
	for {
		ok, err := d.tryAcquire()
		if err != nil || ok {
			return err
		}
		if !waiting {
			d.log.Info("Another supervisor runs for this home; waiting to take over", "home", d.o.Home)
			waiting = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d.o.Interval):
		}
	}
}

// tryAcquire takes the lock of the home if no one holds it.
func (d *daemon) tryAcquire() (bool, error) {
	f, err := os.OpenFile(lockPath(d.o.Home), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return false, fmt.Errorf("opening the supervisor lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return false, nil
		}
		return false, fmt.Errorf("locking %s: %w", lockPath(d.o.Home), err)
	}
	d.held = f
	return true, nil
}

func (d *daemon) release() {
	if d.held != nil {
		_ = d.held.Close()
		d.held = nil
	}
}

// exitIdle decides, with the start lock held so that no client starts another supervisor
// meanwhile, whether to exit: it lets go of the home lock first, so that a client that records a
// process from now on sees no supervisor and starts one once it gets the start lock, then looks
// once more. It returns false, holding the home lock again, when something was recorded in the
// meantime. A home that was removed (rm -rf, a test's temporary directory) is left removed: the
// supervisor exits without creating its lock again.
func (d *daemon) exitIdle(ctx context.Context) bool {
	unlock, ok, err := own(d.o.Home).LockExisting(ctx)
	switch {
	case err != nil:
		return false
	case !ok:
		d.release()
		return true
	}
	defer unlock()
	d.release()
	if d.count() == 0 {
		return true
	}
	ok, err = d.tryAcquire()
	return err != nil || !ok // a standby took over, or the lock is gone: leave it to whoever runs
}

// keepers returns the process.Keepers of the directories Dirs match.
func (d *daemon) keepers() []process.Keeper {
	out, err := Supervised(d.o.Dirs)
	if err != nil {
		d.log.Error(err, "Listing supervised directories")
	}
	return out
}

// Supervised returns the process.Keepers (process.InDir) of the directories that the glob
// patterns match, and an error for each pattern that is malformed.
func Supervised(patterns []string) ([]process.Keeper, error) {
	var out []process.Keeper
	var errs []error
	for _, pattern := range patterns {
		dirs, err := filepath.Glob(pattern)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing %s: %w", pattern, err))
			continue
		}
		for _, dir := range dirs {
			out = append(out, process.InDir(dir))
		}
	}
	return out, errors.Join(errs...)
}

// count returns how many processes are recorded.
func (d *daemon) count() int {
	n, _ := recorded(d.o.Dirs)
	return n
}

// recorded returns how many processes are recorded in the directories the glob patterns match,
// and an error for a malformed pattern or a directory that could not be listed.
func recorded(patterns []string) (int, error) {
	keepers, err := Supervised(patterns)
	errs := []error{err}
	n := 0
	for _, keeper := range keepers {
		names, err := keeper.Names()
		n += len(names)
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// keepAll looks at every recorded process and has the ones that do not run started again, one
// goroutine per directory, and returns how many processes are recorded. A directory whose
// processes are still being started from the last look is skipped.
func (d *daemon) keepAll(ctx context.Context) int {
	n := 0
	for _, keeper := range d.keepers() {
		names, err := keeper.Names()
		if err != nil {
			continue
		}
		n += len(names)
		var down []string
		for _, name := range names {
			if due(keeper, name, time.Now()) {
				down = append(down, name)
			}
		}
		if len(down) == 0 {
			continue
		}
		if _, busy := d.busy.LoadOrStore(keeper.RunDir, true); busy {
			continue
		}
		go func() {
			defer d.busy.Delete(keeper.RunDir)
			d.keep(ctx, keeper, down)
		}()
	}
	return n
}

// due reports whether the process recorded under name should be started again now: it does not
// run, and it is not waiting out a back-off that was already recorded.
func due(keeper process.Keeper, name string, now time.Time) bool {
	p, recorded := keeper.Inspect(name)
	if !recorded || p.PID != 0 {
		return false
	}
	return p.History.ExitedAt.IsZero() || !now.Before(p.History.NextStart)
}

// keep starts again, under the directory's lock, the processes of keeper named down (process.Keep
// applies the back-off). A directory removed meanwhile is left alone: its processes were stopped
// on purpose.
func (d *daemon) keep(ctx context.Context, keeper process.Keeper, down []string) {
	unlock, ok, err := keeper.LockExisting(ctx)
	if err != nil || !ok {
		return
	}
	defer unlock()
	dir := filepath.Dir(keeper.RunDir)
	if d.o.Prepare != nil {
		if err := d.o.Prepare(ctx, dir); err != nil {
			d.log.Error(err, "Preparing to start processes again failed", "dir", dir)
			return
		}
	}
	for _, name := range slices.Sorted(slices.Values(down)) {
		p, err := keeper.Keep(ctx, name)
		log := d.log.WithValues("dir", dir, "process", name)
		switch {
		case err != nil:
			log.Error(err, "Starting process again failed", "failures", p.History.Failures, "nextStart", until(p.History.NextStart))
		case p.Restarted:
			log.Info("Started process again", "pid", p.PID, "restarts", p.History.Restarts, "lastExit", p.History.LastExit)
		}
	}
}

// until renders how long until t, for logs.
func until(t time.Time) string {
	return time.Until(t).Round(100 * time.Millisecond).String()
}
