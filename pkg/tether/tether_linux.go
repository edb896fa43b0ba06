package tether

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// Start starts cmd as exec.Cmd.Start does, with the parent-death signal set to SIGKILL, from
// the thread that lives as long as this process. cmd.SysProcAttr's other fields are kept.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	forkerOnce.Do(func() { go fork() })
	req := forkRequest{cmd: cmd, done: make(chan error, 1)}
	forks <- req
	return <-req.done
}

type forkRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	forkerOnce sync.Once
	forks      = make(chan forkRequest)
)

// fork starts the requested commands, on its own thread, for ever: the thread is never unlocked,
// so no other goroutine runs on it (none can move it into another namespace) and it ends only
// with the process.
func fork() {
	runtime.LockOSThread()
	for req := range forks {
		req.done <- req.cmd.Start()
	}
}
