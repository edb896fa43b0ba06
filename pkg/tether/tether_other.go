//go:build !linux

package tether

import "os/exec"

// Start starts cmd: without Linux's parent-death signal, the child must notice by itself that
// this process has gone.
func Start(cmd *exec.Cmd) error { return cmd.Start() }
