package proctest

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Children lists the pids of this process's children whose command line holds arg ("" for all).
func Children(t testing.TB, arg string) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	var children []int
	for _, p := range stats {
		data, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so count from its closing parenthesis.
		fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(fields) < 2 || fields[1] != self {
			continue
		}
		dir := filepath.Dir(p)
		if arg != "" {
			cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
			if err != nil || !bytes.Contains(cmdline, []byte(arg)) {
				continue
			}
		}
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err == nil {
			children = append(children, pid)
		}
	}
	return children
}
