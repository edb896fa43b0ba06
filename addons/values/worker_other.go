//go:build !linux

package values

import (
	"os"
	"syscall"
)

// selfExecutable is this program.
func selfExecutable() string {
	path, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return path
}

// workerProcAttr: without Linux's parent-death signal, a worker ends when its requests pipe
// closes, which it does when this process exits.
func workerProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

// limitAddressSpace does nothing: only Linux limits the address space reliably. Elsewhere
// debug.SetMemoryLimit (a soft limit) and RenderTimeLimit bound a worker's memory.
func limitAddressSpace(int64) error { return nil }
