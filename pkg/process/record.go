package process

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
)

// record is what the Keeper remembers about a process it started, in <name>.json. It stays
// after the process exits, until Stop: it is what Keep starts again.
type record struct {
	PID        int      `json:"pid"`
	Argv       []string `json:"argv"`
	Env        []string `json:"env,omitempty"`
	Dir        string   `json:"dir,omitempty"`
	Ports      []string `json:"ports,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
	Cgroup     string   `json:"cgroup,omitempty"`
	StartTime  uint64   `json:"startTime"`
	Started    string   `json:"started"`
	History    History  `json:"history,omitzero"`
}

// record is the record of spec's process pid, started at started (kernel start time startTime),
// with history h.
func (s Spec) record(pid int, startTime uint64, started time.Time, h History) record {
	return record{PID: pid, Argv: s.argv(), Env: s.Env, Dir: s.Dir, Ports: s.Ports, Namespaces: s.Namespaces,
		Cgroup: s.Cgroup, StartTime: startTime, Started: started.Format(time.RFC3339Nano), History: h}
}

// spec returns the Spec the record was started from.
func (rec record) spec(name string) Spec {
	return Spec{Name: name, Path: rec.Argv[0], Args: rec.Argv[1:], Env: rec.Env, Dir: rec.Dir, Ports: rec.Ports,
		Namespaces: rec.Namespaces, Cgroup: rec.Cgroup}
}

// recorded reports whether rec is a readable record of a start.
func (rec record) recorded() bool { return rec.PID > 0 && len(rec.Argv) > 0 }

// started returns when the recorded process started; zero when unknown.
func (rec record) started() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, rec.Started)
	return t
}

// process returns the Process rec describes.
func (rec record) process(name string, adopted bool) Process {
	return Process{Name: name, PID: rec.PID, Adopted: adopted, Argv: rec.Argv, Started: rec.started(), History: rec.History}
}

// runs reports whether the recorded process was started as spec.
func (rec record) runs(spec Spec) bool {
	return slices.Equal(rec.Argv, spec.argv()) && slices.Equal(rec.Env, spec.Env) &&
		slices.Equal(rec.Namespaces, spec.Namespaces) && rec.Cgroup == spec.Cgroup
}

func (k Keeper) recordPath(name string) string { return filepath.Join(k.RunDir, name+".json") }

// lookup reads the record of name and reports whether it describes a live process of ours.
func (k Keeper) lookup(name string) (record, bool) {
	rec, why := k.check(name)
	return rec, why == ""
}

// check reads the record of name and returns why it does not describe a live process of ours,
// or "" when it does.
func (k Keeper) check(name string) (record, string) {
	pid, err := readPIDFile(k.PIDPath(name))
	if err != nil {
		return record{}, "no pid file"
	}
	data, err := os.ReadFile(k.recordPath(name))
	if err != nil {
		return record{PID: pid}, "no record"
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil || rec.PID != pid {
		return record{PID: pid}, "record does not match the pid file"
	}
	return rec, whyNotSame(rec)
}

// whyNotSame returns why the process rec describes no longer runs, or "": a new process with the
// same pid, a zombie, another command line or another executable.
func whyNotSame(rec record) string {
	if len(rec.Argv) == 0 {
		return "empty record"
	}
	st, err := readStat(rec.PID)
	switch {
	case err != nil:
		return "no such process"
	case st.State == 'Z' || st.State == 'X' || st.State == 'x':
		return "exited (zombie)"
	case rec.StartTime != 0 && st.StartTime != rec.StartTime:
		return "pid reused by another process"
	}
	argv, err := Cmdline(rec.PID)
	if err != nil || !slices.Equal(argv, rec.Argv) {
		return fmt.Sprintf("pid runs another command line %q", argv)
	}
	if !exeMatches(rec.PID, rec.Argv[0]) {
		exe, _ := Exe(rec.PID)
		return "pid runs another program " + exe
	}
	return ""
}

// sameStart reports whether rec.PID is still the process rec recorded (not a new process that
// reuses the pid), whatever its state.
func sameStart(rec record) bool {
	st, err := readStat(rec.PID)
	return err == nil && (rec.StartTime == 0 || st.StartTime == rec.StartTime)
}

// exeMatches reports whether pid runs program. An unreadable exe link (another user's process)
// defers to the command line, which already matched.
func exeMatches(pid int, program string) bool {
	exe, err := Exe(pid)
	if err != nil {
		return errors.Is(err, fs.ErrPermission)
	}
	if exe == program {
		return true
	}
	resolved, err := filepath.EvalSymlinks(program)
	if err != nil {
		// The program was removed or replaced since the start; the kernel still names it.
		return false
	}
	return exe == resolved
}

func (k Keeper) writeRecord(name string, rec record) error {
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding record of %s: %w", name, err)
	}
	if err := atomicfile.Write(k.recordPath(name), append(data, '\n')); err != nil {
		return err
	}
	return atomicfile.Write(k.PIDPath(name), []byte(strconv.Itoa(rec.PID)+"\n"))
}

func readPIDFile(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(data, []byte{'\n'})
	pid, err := strconv.Atoi(strings.TrimSpace(string(line)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s: invalid content %q", path, line)
	}
	return pid, nil
}
