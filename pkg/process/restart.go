package process

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
)

// The restart policy (see the package documentation): the one restart-with-back-off of
// Flotilla's long-running local processes, those kept from their records (control planes, the
// managers the CLI starts, the registry) and the in-memory provider's process that a manager
// runs and waits for (package inmemory), both through History.Exited.
//
// The bounds: a quick exit is usually something that clears within a second (a port a killed
// server is still releasing, a server it talks to still starting), hence InitialBackOff; a
// program that cannot start at all (a bad flag, a missing file) fails every time, and doubling
// makes that cost little; MaxBackOff caps the doubling at a minute so that a process whose cause
// is fixed (the port freed, the file restored) runs again within a minute with no one acting.
// StableAfter is longer than any of these programs takes to start and connect to what it needs
// (etcd, the API server), so an exit after it is an accident, not a failure to start.
const (
	// StableAfter is how long a process must have run for its exit to count as an accident
	// rather than a failure: it is then started again at once. A process that exits sooner, or
	// cannot be started, fails, and each consecutive failure doubles the wait before the next
	// start.
	StableAfter = 30 * time.Second
	// InitialBackOff is the wait after the first failure.
	InitialBackOff = time.Second
	// MaxBackOff caps the wait.
	MaxBackOff = time.Minute
	// CrashLoopFailures is the number of consecutive failures from which a process is said to
	// crash loop.
	CrashLoopFailures = 3
)

// portWait is how long a start waits for the ports of its process to be free: a server that was
// just killed may still be releasing them.
const portWait = 2 * time.Second

// History is what a Keeper remembers about the exits and restarts of a process since it was
// last started with a new command line. It is kept in the process's record.
type History struct {
	// Restarts counts the starts after the process had exited.
	Restarts int `json:"restarts,omitempty"`
	// Failures counts the consecutive exits that came less than StableAfter after their start,
	// and the starts that failed.
	Failures int `json:"failures,omitempty"`
	// LastExit says how the process last ended: "exit status 1" or "signal: killed" when the
	// program that noticed had started it, "exited" when it could not know, or why a start
	// failed.
	LastExit string `json:"lastExit,omitempty"`
	// PortInUse is the address that kept the last start from happening, when one did.
	PortInUse string `json:"portInUse,omitempty"`
	// ExitedAt is when the last exit was noticed; zero while the process runs.
	ExitedAt time.Time `json:"exitedAt,omitzero"`
	// NextStart is the earliest time the process may be started again.
	NextStart time.Time `json:"nextStart,omitzero"`
}

// Ended says in words how the process last ended: "exited" when that is not known,
// "exited (signal: killed)", or "could not be started (<why>)".
func (h History) Ended() string {
	switch {
	case h.LastExit == "" || h.LastExit == exitedUnknown:
		return exitedUnknown
	case strings.HasPrefix(h.LastExit, notStarted):
		return "could not be started (" + strings.TrimPrefix(h.LastExit, notStarted) + ")"
	}
	return "exited (" + h.LastExit + ")"
}

// LastExit prefixes.
const (
	// exitedUnknown is the LastExit of a process that was not the noticing program's child.
	exitedUnknown = "exited"
	// notStarted prefixes the LastExit of a start that failed.
	notStarted = "not started: "
)

// BackOff is the wait before the next start of a process that failed failures times in a row:
// none after an accident, then InitialBackOff, doubling up to MaxBackOff.
func BackOff(failures int) time.Duration {
	if failures <= 0 {
		return 0
	}
	wait := InitialBackOff
	for range failures - 1 {
		wait *= 2
		if wait >= MaxBackOff {
			return MaxBackOff
		}
	}
	return wait
}

// Exited returns h once a process that ran for ran is noticed to have ended as how, at now:
// Failures counts one more failure, or none after a run of StableAfter, and NextStart is
// BackOff(Failures) from now.
func (h History) Exited(how string, ran time.Duration, now time.Time) History {
	if ran >= StableAfter {
		h.Failures = 0
	} else {
		h.Failures++
	}
	h.LastExit, h.PortInUse, h.ExitedAt = how, "", now
	h.NextStart = now.Add(BackOff(h.Failures))
	return h
}

// startFailed returns h after a start that failed with err at now.
func (h History) startFailed(err error, now time.Time) History {
	h.Failures++
	h.LastExit, h.PortInUse, h.ExitedAt = notStarted+err.Error(), "", now
	if pe, ok := err.(*PortInUseError); ok { //nolint:errorlint // returned unwrapped by start
		h.PortInUse = pe.Address
	}
	h.NextStart = now.Add(BackOff(h.Failures))
	return h
}

// CrashLooping reports whether the process has failed CrashLoopFailures times in a row and has
// not run for StableAfter since: it is waiting out a back-off, or was just started again.
func (h History) CrashLooping(running bool, started, now time.Time) bool {
	if h.Failures < CrashLoopFailures {
		return false
	}
	return !running || now.Sub(started) < StableAfter
}

// PortInUseError says that a process was not started because another program listens on one of
// its ports.
type PortInUseError struct {
	// Name is the process, Address the host:port that is taken.
	Name, Address string
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("%s cannot listen on %s: the address is in use by another program", e.Name, e.Address)
}

// PortFree reports whether a server could listen on address (host:port) now.
func PortFree(address string) bool {
	l, err := net.Listen("tcp", address)
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// CheckPorts returns a PortInUseError for the first of spec's ports that stays taken for two
// seconds (a server that was just killed may still be releasing its ports). Starts check; callers
// that start several processes check them all first, to start none when one cannot.
func CheckPorts(ctx context.Context, spec Spec) error {
	for _, address := range spec.Ports {
		deadline := time.Now().Add(portWait)
		for !PortFree(address) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return &PortInUseError{Name: spec.Name, Address: address}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// children holds, by pid, the processes this program started and has not yet seen exit: a
// channel closed once the process has been reaped, and how it ended.
var children sync.Map

// child is an entry of children.
type child struct {
	// startTime is the kernel start time of the process, which tells it from a later process
	// with the same pid.
	startTime uint64
	done      chan struct{}
	how       string
}

// exitOf returns, and forgets, how the process rec describes ended when it was this program's
// child, or "exited" when that cannot be known (another program started it). A child that was
// just seen dying may not be reaped yet: it waits a moment for that.
func exitOf(rec record) string {
	v, ok := children.Load(rec.PID)
	if !ok || v.(*child).startTime != rec.StartTime {
		return exitedUnknown
	}
	children.Delete(rec.PID)
	c := v.(*child)
	select {
	case <-c.done:
		return c.how
	case <-time.After(time.Second):
		return exitedUnknown
	}
}

// restart starts spec, which ran as rec and exited, unless its back-off says to wait. The first
// call after the exit records it in the history.
func (k Keeper) restart(ctx context.Context, spec Spec, rec record) (Process, error) {
	log := ctrl.LoggerFrom(ctx)
	now := time.Now().UTC().Round(0) // as read back from the record: no monotonic reading
	h := rec.History
	if h.ExitedAt.IsZero() {
		h = h.Exited(exitOf(rec), now.Sub(rec.started()), now)
		rec.History = h
		if err := k.writeRecord(spec.Name, rec); err != nil {
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
	p, err := k.start(ctx, spec, next)
	if err != nil {
		rec.History = h.startFailed(err, time.Now().UTC().Round(0))
		if werr := k.writeRecord(spec.Name, rec); werr != nil {
			return Process{}, errors.Join(err, werr)
		}
		return Process{Name: spec.Name, Argv: rec.Argv, Started: rec.started(), History: rec.History}, err
	}
	p.Restarted = !p.Adopted
	return p, nil
}
