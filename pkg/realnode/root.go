package realnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// A node's init is the program that runs real nodes run again, with initArg as its only
// argument and initEnv set to its initConfig: this package's init turns such a process into
// the node's init before its main (or any test) starts, so that every program that runs real
// nodes serves as their init; there is no other program to install. It starts in new user,
// network, mount, PID, UTS and IPC namespaces and in the node's cgroup; it makes the node's root
// file system (rootSteps), makes it its root (pivot_root), becomes the node's root (the first
// id of its range, chooseIDs), reports on fd 3, and then stays, as the PID namespace's init,
// reaping the orphans of the node (containerd's shims). When it ends, the kernel kills every
// process of the namespace: the node goes.
const (
	initArg = "__flotilla-real-node-init"
	initEnv = "FLOTILLA_REAL_NODE_INIT"
)

// initConfig is what the init needs to make the node's root.
type initConfig struct {
	// Dir is the node's directory.
	Dir string `json:"dir"`
	// Name is the node's name, its host name.
	Name string `json:"name"`
	// Binaries is the directory of the node's programs.
	Binaries string `json:"binaries"`
	// IDBase is the host id of the node's root, the first of its range (idRange).
	IDBase uint32 `json:"idBase"`
}

// initTimeout bounds how long the init takes to make the node's root.
const initTimeout = 10 * time.Second

func init() {
	if len(os.Args) == 2 && os.Args[1] == initArg && os.Getenv(initEnv) != "" {
		os.Exit(runInit(os.Getenv(initEnv), os.NewFile(3, "ready")))
	}
}

// runInit makes the node's root, reports on ready (an empty report is success) and reaps the
// node's orphans until the node is killed.
func runInit(config string, ready *os.File) int {
	// The init of a PID namespace gets only the signals it handles: the node's processes can
	// signal it, and none of their signals ends it (the node would go with it).
	signals := make(chan os.Signal, 64)
	signal.Notify(signals)
	var cfg initConfig
	err := json.Unmarshal([]byte(config), &cfg)
	if err == nil {
		err = makeRoot(cfg)
	}
	if err != nil {
		_, _ = fmt.Fprintf(ready, "%v", err)
		return 1
	}
	_ = ready.Close()
	for {
		for {
			pid, err := unix.Wait4(-1, nil, unix.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
		for sig := range signals {
			if sig == unix.SIGCHLD {
				break
			}
		}
	}
}

// A rootStep is one step in making the node's root file system, in order; Target is a path of
// the node's root.
type rootStep struct {
	Target string
	// Bind is the host's file or directory shown at Target (a bind mount); ReadOnly makes it
	// (or the file system mounted) a read-only mount. Recursive binds the mounts below it too.
	Bind                string
	ReadOnly, Recursive bool
	// FSType, Flags and Data mount a file system at Target (a directory).
	FSType, Data string
	Flags        uintptr
	// Link makes Target a symbolic link to Link.
	Link string
	// File makes Target a file holding File.
	File *string
	// Mode is the mode of Target when it is a directory made for the step (Dir) or a File.
	Mode fs.FileMode
	// Dir makes Target a directory (with Mode).
	Dir bool
}

// hostDevices are the devices of the host a node has in its /dev: containerd gives privileged
// containers the node's devices, and no more. kubelet watches /dev/kmsg for OOM kills.
var hostDevices = []string{"null", "zero", "full", "random", "urandom", "tty", "kmsg"}

// usrLinks are the top directories a merged /usr links into /usr (/bin -> usr/bin); a host
// whose are directories has them bound read-only instead.
var usrLinks = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// hostEtc are the files of the host's /etc a node reads: iptables' alternative and the dynamic
// linker's cache. The rest of its /etc is its own.
var hostEtc = []string{"alternatives", "ld.so.cache"}

// rootSteps makes the node's root file system: a tmpfs of its own that shows, of the host, only
// the programs and libraries the node runs (/usr, the node's programs of its binaries, each
// read-only at its path), its own directory and runtime directory, the cgroup hierarchies, and a
// few devices; its /proc is its PID namespace's, its /sys its network namespace's, its /etc its
// own.
func rootSteps(cfg initConfig, l layout) ([]rootStep, error) {
	steps := []rootStep{{Target: "/usr", Bind: "/usr", ReadOnly: true, Recursive: true}}
	for _, name := range usrLinks {
		path := "/" + name
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return nil, err
			}
			steps = append(steps, rootStep{Target: path, Link: link})
		default:
			steps = append(steps, rootStep{Target: path, Bind: path, ReadOnly: true, Recursive: true})
		}
	}
	hosts := "127.0.0.1 localhost\n::1 localhost\n127.0.1.1 " + cfg.Name + "\n"
	hostname := cfg.Name + "\n"
	passwd, group := "root:x:0:0:root:/root:/bin/sh\n", "root:x:0:\n" //nolint:gosec // an /etc/passwd of root alone: no credential
	resolv := resolvConf
	steps = append(steps,
		rootStep{Target: "/etc", Dir: true, Mode: 0o755},
		rootStep{Target: "/etc/hostname", File: &hostname, Mode: 0o644},
		rootStep{Target: "/etc/hosts", File: &hosts, Mode: 0o644},
		rootStep{Target: "/etc/resolv.conf", File: &resolv, Mode: 0o644},
		rootStep{Target: "/etc/passwd", File: &passwd, Mode: 0o644},
		rootStep{Target: "/etc/group", File: &group, Mode: 0o644},
		rootStep{Target: "/etc/os-release", Link: "../usr/lib/os-release"},
	)
	for _, name := range hostEtc {
		if _, err := os.Stat("/etc/" + name); err == nil {
			steps = append(steps, rootStep{Target: "/etc/" + name, Bind: "/etc/" + name, ReadOnly: true})
		}
	}
	steps = append(steps,
		rootStep{Target: "/proc", FSType: "proc", Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
	)
	for name := range kernelSettings {
		steps = append(steps, rootStep{Target: filepath.Join("/proc/sys", name), Bind: l.sysctlFile(name)})
	}
	steps = append(steps,
		rootStep{Target: "/sys", FSType: "sysfs", Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ReadOnly: true},
		rootStep{Target: "/sys/fs/cgroup", Bind: "/sys/fs/cgroup", Recursive: true},
		rootStep{Target: "/dev", FSType: "tmpfs", Flags: unix.MS_NOSUID, Data: "mode=0755,size=1m"},
	)
	for _, name := range hostDevices {
		steps = append(steps, rootStep{Target: "/dev/" + name, Bind: "/dev/" + name})
	}
	steps = append(steps,
		rootStep{Target: "/dev/pts", FSType: "devpts", Flags: unix.MS_NOSUID | unix.MS_NOEXEC, Data: "newinstance,ptmxmode=0666,mode=0620,gid=5"},
		rootStep{Target: "/dev/ptmx", Link: "pts/ptmx"},
		rootStep{Target: "/dev/shm", FSType: "tmpfs", Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: "mode=1777,size=64m"},
		rootStep{Target: "/dev/mqueue", FSType: "mqueue", Flags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC},
		rootStep{Target: "/dev/fd", Link: "/proc/self/fd"},
		rootStep{Target: "/dev/stdin", Link: "/proc/self/fd/0"},
		rootStep{Target: "/dev/stdout", Link: "/proc/self/fd/1"},
		rootStep{Target: "/dev/stderr", Link: "/proc/self/fd/2"},
		rootStep{Target: "/tmp", Dir: true, Mode: 0o1777},
		rootStep{Target: "/run", Dir: true, Mode: 0o755},
		rootStep{Target: "/var/run", Link: "../run"},
		rootStep{Target: "/var/log", Dir: true, Mode: 0o755},
		rootStep{Target: "/var/lib/cni", Dir: true, Mode: 0o700},
		rootStep{Target: l.dir, Bind: l.dir},
		rootStep{Target: l.runtimeDir(), Bind: l.runtimeDir()},
		rootStep{Target: l.kubeletRootMount(), Bind: l.kubeletRoot()},
	)
	for _, name := range binaries.NodeNames {
		path := filepath.Join(cfg.Binaries, name)
		steps = append(steps, rootStep{Target: path, Bind: path, ReadOnly: true})
	}
	return steps, nil
}

// rootSize bounds the node's own files in its root (/etc, /tmp, /run, /var/log, /var/lib/cni):
// its state is in its directory.
const rootSize = "64m"

// makeRoot makes the calling process's new namespaces the node's: its host name, and its root
// file system (rootSteps), which becomes its root.
func makeRoot(cfg initConfig) error {
	l := newLayout(cfg.Dir)
	if err := unix.Sethostname([]byte(cfg.Name)); err != nil {
		return fmt.Errorf("setting the host name: %w", err)
	}
	// Nothing mounted from here on reaches the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	steps, err := rootSteps(cfg, l)
	if err != nil {
		return err
	}
	// The init starts as the host's root without its privileges (its ids are not the
	// namespace's), to reach the host's files it binds as their owner: it opens them, and
	// becomes the node's root, who owns the files of the node's root file system.
	sources := map[string]*os.File{}
	defer func() {
		for _, f := range sources {
			_ = f.Close()
		}
	}()
	for _, step := range steps {
		if step.Bind == "" || sources[step.Bind] != nil {
			continue
		}
		f, err := openNoFollow(step.Bind)
		if err != nil {
			return fmt.Errorf("making the node's %s: %w", step.Target, err)
		}
		sources[step.Bind] = f
	}
	if err := unix.Setgroups(nil); err != nil {
		return fmt.Errorf("dropping the host's groups: %w", err)
	}
	if err := unix.Setresgid(0, 0, 0); err != nil {
		return fmt.Errorf("becoming the node's root group: %w", err)
	}
	if err := unix.Setresuid(0, 0, 0); err != nil {
		return fmt.Errorf("becoming the node's root: %w", err)
	}
	root := l.rootfs()
	if err := unix.Mount("tmpfs", root, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size="+rootSize); err != nil {
		return fmt.Errorf("mounting the node's root on %s: %w", root, err)
	}
	for _, step := range steps {
		if err := step.do(root, sources[step.Bind]); err != nil {
			return fmt.Errorf("making the node's %s: %w", step.Target, err)
		}
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	// The old root is stacked below the new one by pivot_root(".", "."), and unmounted.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("changing the root to %s: %w", root, err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmounting the host's root: %w", err)
	}
	return os.Chdir("/")
}

// openNoFollow opens path (O_PATH) unless its last element is a symbolic link: a source in a
// directory of the node (kubelet's root directory) is never a link the node made to a file of
// the host. The directories above it are the host root's.
func openNoFollow(path string) (*os.File, error) {
	dir, err := os.OpenFile(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = dir.Close() }()
	fd, err := unix.Openat(int(dir.Fd()), filepath.Base(path), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if fi, err := f.Stat(); err != nil || fi.Mode()&fs.ModeSymlink != 0 {
		_ = f.Close()
		return nil, fmt.Errorf("%s is a symbolic link: a node binds no link", path)
	}
	return f, nil
}

// do takes the step in the root file system being made at root; source is s.Bind, opened.
func (s rootStep) do(root string, source *os.File) error {
	target := filepath.Join(root, s.Target)
	switch {
	case s.Link != "":
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil { //nolint:gosec // the node's root: its programs read it as other users
			return err
		}
		return os.Symlink(s.Link, target)
	case s.File != nil:
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil { //nolint:gosec // the node's root: its programs read it as other users
			return err
		}
		return os.WriteFile(target, []byte(*s.File), s.Mode)
	case s.Dir:
		if err := os.MkdirAll(target, s.Mode); err != nil {
			return err
		}
		return os.Chmod(target, s.Mode)
	case s.FSType != "":
		if err := os.MkdirAll(target, 0o755); err != nil { //nolint:gosec // the node's root: its programs read it as other users
			return err
		}
		if err := unix.Mount(s.FSType, target, s.FSType, s.Flags, s.Data); err != nil {
			return err
		}
		// Read-only as a mount, not as a file system: a file system the node mounts again (a
		// container's sysfs) is the same one, which must not be read-only.
		return s.readOnly(target)
	}
	fi, err := source.Stat()
	if err != nil {
		return err
	}
	if err := mountPoint(target, fi.IsDir()); err != nil {
		return err
	}
	flags := uintptr(unix.MS_BIND)
	if s.Recursive {
		flags |= unix.MS_REC
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", source.Fd()), target, "", flags, ""); err != nil {
		return err
	}
	return s.readOnly(target)
}

// readOnly makes the mount at target read-only when the step says so.
func (s rootStep) readOnly(target string) error {
	if !s.ReadOnly {
		return nil
	}
	return unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|s.Flags, "")
}

// mountPoint makes target, a directory or an empty file, unless it exists.
func mountPoint(target string, dir bool) error {
	if _, err := os.Lstat(target); err == nil {
		return nil
	}
	if dir {
		return os.MkdirAll(target, 0o755) //nolint:gosec // the node's root: its programs read it as other users
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil { //nolint:gosec // the node's root: its programs read it as other users
		return err
	}
	return touch(target)
}

// nodeNamespaces are the namespaces of a node, by the names /proc/<pid>/ns gives them; its
// init makes them all.
var nodeNamespaces = []string{"user", "net", "pid", "uts", "ipc", "mnt"}

// namespaces are the files that keep the node's namespaces (nodeNamespaces): its processes run
// in them (process.Spec.Namespaces).
func (l layout) namespaces() []string {
	var paths []string
	for _, ns := range nodeNamespaces {
		paths = append(paths, l.namespace(ns))
	}
	return paths
}

// initRecord is what the node's runtime directory records of its init.
type initRecord struct {
	PID    int        `json:"pid"`
	Config initConfig `json:"config"`
}

// initRuns reports whether the node's init runs with config: the process its record names is
// the first of the PID namespace the node keeps.
func initRuns(l layout, config initConfig) bool {
	data, err := os.ReadFile(l.initRecord())
	if err != nil {
		return false
	}
	var rec initRecord
	if json.Unmarshal(data, &rec) != nil || rec.Config != config {
		return false
	}
	var kept, running unix.Stat_t
	if unix.Stat(l.namespace("pid"), &kept) != nil || unix.Stat(fmt.Sprintf("/proc/%d/ns/pid", rec.PID), &running) != nil {
		return false
	}
	return kept.Dev == running.Dev && kept.Ino == running.Ino && nsPID(rec.PID) == 1
}

// allCapabilities lists every capability.
func allCapabilities() []uintptr {
	caps := make([]uintptr, 0, unix.CAP_LAST_CAP+1)
	for c := range uintptr(unix.CAP_LAST_CAP + 1) {
		caps = append(caps, c)
	}
	return caps
}

// nsPID returns pid's number in its own PID namespace, 0 when unknown.
func nsPID(pid int) int {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				n, _ := strconv.Atoi(fields[len(fields)-1])
				return n
			}
		}
	}
	return 0
}

// ensureInit makes the node's init run in the node's cgroup, and keeps its namespaces
// (nodeNamespaces) at their files, unless it runs with the same root (the node's name, programs
// and ids). A node whose init is gone has lost every process of its PID namespace
// with it; what is left of it (the processes of a node made before nodes had inits, their mount
// namespace, or of the init of another root) goes first: its containers start again.
func ensureInit(cfg Config, l layout, cgroup string, base uint32) error {
	config := initConfig{Dir: l.dir, Name: cfg.Name, Binaries: cfg.Binaries.Dir, IDBase: base}
	if initRuns(l, config) {
		return nil
	}
	if err := killCgroups(l); err != nil {
		return err
	}
	if err := releaseNamespaces(l.namespaces()...); err != nil {
		return err
	}
	// Once for a node, and for a node made before nodes had user namespaces: all it wrote.
	for _, dir := range l.nodeOwned() {
		if err := chownTree(base, dir); err != nil {
			return err
		}
	}
	if err := ensurePrivateMount(mountNSDir); err != nil {
		return err
	}
	if err := ensureHostDir(filepath.Dir(l.netNS()), 0o755); err != nil {
		return err
	}
	pid, err := startInit(config, l, cgroup)
	if err != nil {
		return err
	}
	for _, ns := range nodeNamespaces {
		if err := touch(l.namespace(ns)); err != nil {
			return err
		}
		src := fmt.Sprintf("/proc/%d/ns/%s", pid, ns)
		if err := unix.Mount(src, l.namespace(ns), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("keeping the %s namespace of node %s at %s: %w", ns, l.dir, l.namespace(ns), err)
		}
	}
	rec, err := json.Marshal(initRecord{PID: pid, Config: config})
	if err != nil {
		return err
	}
	return writeIfChanged(l.initRecord(), rec)
}

// startInit starts the node's init and waits until it has made the node's root.
func startInit(cfg initConfig, l layout, cgroup string) (int, error) {
	config, err := json.Marshal(cfg)
	if err != nil {
		return 0, err
	}
	log, err := os.OpenFile(l.path("logs", "init.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600) //nolint:gosec // the node's own log
	if err != nil {
		return 0, fmt.Errorf("opening the init's log: %w", err)
	}
	defer func() { _ = log.Close() }()
	group, err := os.Open(cgroup)
	if err != nil {
		return 0, fmt.Errorf("opening cgroup %s: %w", cgroup, err)
	}
	defer func() { _ = group.Close() }()
	report, ready, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer func() { _ = report.Close() }()

	cmd := exec.Command("/proc/self/exe", initArg)
	cmd.Env = []string{initEnv + "=" + string(config)}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{ready}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setsid: true,
		Cloneflags: unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
			unix.CLONE_NEWNET,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(cfg.IDBase), Size: idRange}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: int(cfg.IDBase), Size: idRange}},
		GidMappingsEnableSetgroups: true,
		// It keeps the host's root's ids, which the namespace does not map, to reach the host's
		// files it binds as their owner, and so needs its capabilities (in the namespace only)
		// through exec(2) as ambient ones.
		AmbientCaps: allCapabilities(),
		UseCgroupFD: true, CgroupFD: int(group.Fd()),
	}
	err = cmd.Start()
	_ = ready.Close()
	if err != nil {
		return 0, fmt.Errorf("starting the init of node %s: %w", l.dir, err)
	}
	go func() { _ = cmd.Wait() }() // reaped when it ends, while this program runs
	_ = report.SetReadDeadline(time.Now().Add(initTimeout))
	msg, err := io.ReadAll(report)
	if err == nil && len(msg) > 0 {
		err = errors.New(string(msg))
	}
	if err != nil {
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("making the root of node %s: %w (see %s)", l.dir, err, l.path("logs", "init.log"))
	}
	return cmd.Process.Pid, nil
}
