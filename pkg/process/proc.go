package process

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// procRoot is where the proc filesystem is mounted.
const procRoot = "/proc"

// procStat is what the Keeper reads from /proc/<pid>/stat.
type procStat struct {
	// State is the one-letter process state: R, S, D, Z (zombie), X (dead), T, ...
	State byte
	// StartTime is the time the process started after system boot, in clock ticks. Together
	// with the pid it identifies a process across pid reuse.
	StartTime uint64
}

// readStat parses /proc/<pid>/stat. It returns an error wrapping os.ErrNotExist when there is
// no such process.
func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile(fmt.Sprintf("%s/%d/stat", procRoot, pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) is in parentheses and may contain spaces or ')': the fields
	// after it start after the last ')'.
	end := bytes.LastIndexByte(data, ')')
	if end < 0 || end+2 >= len(data) {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(data[end+2:]))
	// fields[0] is field 3 (state); start time is field 22, i.e. fields[19].
	if len(fields) < 20 || len(fields[0]) != 1 {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat: %d fields", pid, len(fields))
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat start time: %w", pid, err)
	}
	return procStat{State: fields[0][0], StartTime: start}, nil
}

// Alive reports whether pid names a running process. A zombie (exited, not yet reaped by its
// parent) or a process being torn down counts as dead.
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	st, err := readStat(pid)
	if err != nil {
		return false
	}
	return st.State != 'Z' && st.State != 'X' && st.State != 'x'
}

// Gone reports whether pid has finished exiting: it no longer exists, or it is a zombie whose
// threads have all exited. The leader of a multi-threaded process shows as a zombie while its
// other threads still tear down, holding its files and listening sockets; a process is only Gone
// once they are released, so that its ports can be bound again.
func Gone(pid int) bool {
	st, err := readStat(pid)
	if err != nil {
		return true
	}
	if st.State != 'Z' && st.State != 'X' && st.State != 'x' {
		return false
	}
	tasks, err := os.ReadDir(fmt.Sprintf("%s/%d/task", procRoot, pid))
	return err != nil || len(tasks) <= 1
}

// Cmdline returns the argument vector of pid from /proc/<pid>/cmdline.
func Cmdline(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("%s/%d/cmdline", procRoot, pid))
	if err != nil {
		return nil, err
	}
	data = bytes.TrimSuffix(data, []byte{0})
	if len(data) == 0 {
		return nil, nil
	}
	return strings.Split(string(data), "\x00"), nil
}

// Exe returns the program pid runs, from the /proc/<pid>/exe link, without the " (deleted)"
// suffix the kernel adds when the file was replaced or removed since the process started.
func Exe(pid int) (string, error) {
	exe, err := os.Readlink(fmt.Sprintf("%s/%d/exe", procRoot, pid))
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(exe, " (deleted)"), nil
}

// signalGroup sends sig to the process group led by pid (processes are started with setsid, so
// they lead their group), falling back to the process alone when the group is gone.
func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		err = syscall.Kill(pid, sig)
	}
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// markerEnv is the variable every started process gets in its environment: the absolute path
// of its record. A starter that dies between starting a process and writing its record (killed
// during the second exec(2) takes) leaves a process no record names; the next start finds it by
// this mark instead of starting a second copy beside it (see findMarked).
const markerEnv = "FLOTILLA_PROCESS"

// findMarked returns the oldest live process whose environment carries marker (markerEnv=marker)
// and whose command line is argv and program argv[0]. Processes it may not read (other users')
// are skipped.
func findMarked(marker string, argv []string) (int, procStat, bool) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return 0, procStat{}, false
	}
	want := []byte(markerEnv + "=" + marker + "\x00")
	wantAfter := append([]byte{0}, want...) // the mark after another variable
	var found int
	var foundStat procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		environ, err := os.ReadFile(fmt.Sprintf("%s/%d/environ", procRoot, pid))
		if err != nil || !bytes.HasPrefix(environ, want) && !bytes.Contains(environ, wantAfter) {
			continue
		}
		st, err := readStat(pid)
		if err != nil || st.State == 'Z' || st.State == 'X' || st.State == 'x' {
			continue
		}
		if current, err := Cmdline(pid); err != nil || !slices.Equal(current, argv) || !exeMatches(pid, argv[0]) {
			continue
		}
		if found == 0 || st.StartTime < foundStat.StartTime {
			found, foundStat = pid, st
		}
	}
	return found, foundStat, found != 0
}
