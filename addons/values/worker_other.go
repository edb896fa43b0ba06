//go:build !linux

package values

import "os"

// selfExecutable is this program.
func selfExecutable() string {
	path, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return path
}

// limitAddressSpace does nothing: only Linux limits the address space reliably. Elsewhere
// debug.SetMemoryLimit (a soft limit) and RenderTimeLimit bound a worker's memory.
func limitAddressSpace(int64) error { return nil }
