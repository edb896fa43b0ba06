package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

// Watching a manager (see watchManager).
const (
	// managerWatchInterval is how often the watch looks at the manager.
	managerWatchInterval = time.Second
	// restartReportAfter is how long after the manager stopped the watch says that it does not
	// run again yet, and why.
	restartReportAfter = 10 * time.Second
	// unhealthyChecks is how many health checks in a row a running manager may fail before the
	// watch says so.
	unhealthyChecks = 5
)

// watchManager reports, until the returned stop is called, what happens to the manager of local
// management cluster name while a command waits on it. Every second it looks at the manager's
// process and, while that runs, asks its health endpoint; it prints when the manager stopped
// (and how it ended), when it is ready again (and how long that took), and when it has not come
// back within restartReportAfter (and why: a crash loop, a taken port, no supervisor, which it
// then starts). Without it a waiting command would print its last status line forever.
func (c *Client) watchManager(ctx context.Context, name string) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	w := &managerWatch{c: c, name: name, keeper: c.keeper(name)}
	if p, recorded := w.keeper.Inspect(managerProcess); recorded && p.PID != 0 {
		w.pid = p.PID
	} else {
		w.down = time.Now()
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(managerWatchInterval)
		defer ticker.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
				w.observe(ctx, time.Now())
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// managerWatch is the state of watchManager.
type managerWatch struct {
	c      *Client
	name   string
	keeper process.Keeper
	// pid is the manager process last seen running.
	pid int
	// down is when the manager was seen stopped; zero while it runs.
	down time.Time
	// late is true once the watch said that the manager does not run again yet.
	late bool
	// unhealthy counts the failed health checks in a row of the running manager.
	unhealthy int
}

// observe looks at the manager once.
func (w *managerWatch) observe(ctx context.Context, now time.Time) {
	p, recorded := w.keeper.Inspect(managerProcess)
	if !recorded {
		if w.pid != 0 || !w.down.IsZero() {
			w.say("was stopped")
		}
		w.pid, w.down = 0, time.Time{}
		return
	}
	if w.down.IsZero() {
		if p.PID == w.pid {
			w.checkHealth(ctx)
			return
		}
		w.down, w.late, w.unhealthy = now, false, 0
		if p.PID == 0 {
			w.say(fmt.Sprintf("stopped: pid %d %s; the supervisor starts it again", w.pid, p.History.Ended()))
		} else {
			w.say(fmt.Sprintf("stopped: pid %d %s; the supervisor started it again (pid %d)", w.pid, p.History.Ended(), p.PID))
		}
		w.pid = 0
	}
	if p.PID != 0 && w.c.ManagerReady(ctx, w.name) == nil {
		w.say(fmt.Sprintf("runs again (pid %d), ready %s after it stopped", p.PID, formatElapsed(now.Sub(w.down))))
		w.pid, w.down = p.PID, time.Time{}
		return
	}
	if !w.late && now.Sub(w.down) >= restartReportAfter {
		w.late = true
		w.say("does not run again yet: " + w.whyDown(ctx, p, now))
	}
}

// checkHealth asks a running manager's health endpoint, and says when it stopped answering.
func (w *managerWatch) checkHealth(ctx context.Context) {
	err := w.c.probeManager(ctx, w.name, "/healthz")
	if err == nil {
		w.unhealthy = 0
		return
	}
	if w.unhealthy++; w.unhealthy == unhealthyChecks {
		w.say(fmt.Sprintf("(pid %d) runs but does not answer its health endpoint: %v", w.pid, err))
	}
}

// whyDown says why the manager does not run again yet, starting the supervisor when none runs.
func (w *managerWatch) whyDown(ctx context.Context, p process.Process, now time.Time) string {
	h := p.History
	switch {
	case !supervisor.Running(w.c.Home):
		if err := w.c.EnsureSupervisor(ctx); err != nil {
			return "no supervisor runs, and starting one failed: " + err.Error()
		}
		return "no supervisor ran; one was started"
	case h.PortInUse != "":
		return fmt.Sprintf("%s is in use by another program; the supervisor tries again in %s", h.PortInUse, formatElapsed(max(h.NextStart.Sub(now), 0)))
	case p.PID == 0:
		return fmt.Sprintf("it %s, %d time(s) in a row; the supervisor tries again in %s (see %s)",
			h.Ended(), h.Failures, formatElapsed(max(h.NextStart.Sub(now), 0)), w.keeper.LogPath(managerProcess))
	}
	return fmt.Sprintf("it runs (pid %d) but is not ready (see %s)", p.PID, w.keeper.LogPath(managerProcess))
}

// say prints one line about the manager.
func (w *managerWatch) say(what string) {
	fmt.Fprintf(w.c.Out, "The manager of management cluster %q %s\n", w.name, what)
}
