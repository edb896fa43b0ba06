package values

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// selfExecutable is this program: /proc/self/exe names it even when its file was replaced or
// removed since it started (an upgrade).
func selfExecutable() string { return "/proc/self/exe" }

// limitAddressSpace limits this process's address space to what it holds now plus memory
// (RLIMIT_AS: an allocation past it fails, and the Go runtime exits saying "out of memory").
func limitAddressSpace(memory int64) error {
	statm, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return fmt.Errorf("reading the address space size: %w", err)
	}
	fields := strings.Fields(string(statm))
	if len(fields) == 0 {
		return fmt.Errorf("reading the address space size: /proc/self/statm is empty")
	}
	pages, err := strconv.ParseUint(fields[0], 10, 64)
	if err != nil {
		return fmt.Errorf("reading the address space size: %w", err)
	}
	as := pages*uint64(os.Getpagesize()) + uint64(memory) //nolint:gosec // memory is a positive constant
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return fmt.Errorf("limiting the address space: %w", err)
	}
	return nil
}
