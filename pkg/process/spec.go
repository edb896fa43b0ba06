package process

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Spec describes a process to run.
type Spec struct {
	// Name identifies the process within its Keeper: run/<Name>.pid, logs/<Name>.log.
	Name string
	// Path is the absolute path of the program. The program must keep the command line it was
	// started with (not exec another program, not rewrite its argv): adoption compares it.
	Path string
	// Args are the arguments after the program name.
	Args []string
	// Env is added to the inherited PATH, HOME, USER, TMPDIR, LANG and TZ, as KEY=value.
	// Changing Path, Args or Env restarts the process.
	Env []string
	// Dir is the working directory; empty means the Keeper's RunDir.
	Dir string
	// Ports are the addresses (host:port) the process listens on. A start waits a moment for
	// them to be free and otherwise fails with a PortInUseError, so that a port another program
	// took is reported as such rather than as a crash.
	Ports []string
	// Namespaces are the paths of namespaces the process runs in (files such as
	// /run/netns/<name> that keep a namespace, of any type); for each type not among them,
	// this program's. A process in a user namespace is started through util-linux's nsenter,
	// as the namespace's root.
	Namespaces []string
	// Cgroup is the directory of a cgroup v2 group the process starts in (see Cgroup2Root), so
	// that it and everything it starts can be found and killed together; empty: this
	// program's. Changing Namespaces or Cgroup restarts the process.
	Cgroup string
}

// argv is the command line the Spec runs.
func (s Spec) argv() []string {
	return append([]string{s.Path}, s.Args...)
}

func (s Spec) validate() error {
	switch {
	case s.Name == "" || strings.ContainsAny(s.Name, `/\`):
		return fmt.Errorf("process name %q: must be a non-empty file name", s.Name)
	case !filepath.IsAbs(s.Path):
		return fmt.Errorf("process %s: program path %q must be absolute", s.Name, s.Path)
	}
	return nil
}
