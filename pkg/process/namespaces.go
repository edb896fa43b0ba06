package process

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"
)

// startIn starts cmd in spec's namespaces and cgroup (Spec.Namespaces, Spec.Cgroup).
//
// Namespaces belong to threads: a thread of this program (InThread) enters them and forks the
// process, which inherits them (a PID namespace is that of the thread's children). The mount
// namespace is entered last: entering it changes the thread's root, under which the other
// namespaces' files may not be. Joining a mount namespace needs a thread that shares no file
// system attributes (root, working directory) with the others, hence unshare(CLONE_FS) first.
// The cgroup is entered at the fork itself (clone3 with CLONE_INTO_CGROUP, cgroup v2), so that
// nothing the process starts can escape it.
func startIn(cmd *exec.Cmd, spec Spec) error {
	if spec.Cgroup != "" {
		dir, err := os.Open(spec.Cgroup)
		if err != nil {
			return fmt.Errorf("opening cgroup %s: %w", spec.Cgroup, err)
		}
		defer func() { _ = dir.Close() }()
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(dir.Fd())
	}
	if len(spec.Namespaces) == 0 {
		return cmd.Start()
	}
	opened, err := openNamespaces(spec.Namespaces)
	defer func() {
		for _, ns := range opened {
			_ = ns.f.Close()
		}
	}()
	if err != nil {
		return err
	}
	enter := opened
	if slices.ContainsFunc(opened, func(ns namespace) bool { return ns.kind == unix.CLONE_NEWUSER }) {
		if enter, err = throughNsenter(cmd, opened); err != nil {
			return err
		}
	}
	return InThread(func() error {
		for _, ns := range enter {
			if ns.kind == unix.CLONE_NEWNS {
				if err := unix.Unshare(unix.CLONE_FS); err != nil {
					return fmt.Errorf("unsharing file system attributes: %w", err)
				}
			}
			if err := unix.Setns(int(ns.f.Fd()), ns.kind); err != nil {
				return fmt.Errorf("entering namespace %s: %w", ns.path, err)
			}
		}
		return cmd.Start()
	})
}

// namespace is a namespace a process starts in, opened.
type namespace struct {
	path string
	f    *os.File
	kind int
}

// openNamespaces opens the namespaces at paths, the mount namespace last (see startIn); the
// caller closes those returned, also with an error.
func openNamespaces(paths []string) ([]namespace, error) {
	var namespaces []namespace
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return namespaces, fmt.Errorf("opening namespace %s: %w", path, err)
		}
		kind, err := unix.IoctlRetInt(int(f.Fd()), unix.NS_GET_NSTYPE)
		if err != nil {
			_ = f.Close()
			return namespaces, fmt.Errorf("namespace %s: %w", path, err)
		}
		namespaces = append(namespaces, namespace{path: path, f: f, kind: kind})
	}
	slices.SortStableFunc(namespaces, func(a, b namespace) int {
		return cmp.Compare(boolInt(a.kind == unix.CLONE_NEWNS), boolInt(b.kind == unix.CLONE_NEWNS))
	})
	return namespaces, nil
}

// throughNsenter makes cmd run through nsenter, which enters namespaces but the PID namespace:
// a thread of a program with several cannot enter a user namespace, and nsenter, which has one,
// enters them and runs the program in its place. The PID namespace, returned, is the thread's,
// for nsenter to be forked into; the working directory is the one of that name in the mount
// namespace (--wdns), never the host's.
func throughNsenter(cmd *exec.Cmd, namespaces []namespace) (thread []namespace, _ error) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("%w: nsenter enters user namespaces: install Debian's util-linux package", err)
	}
	args := []string{"nsenter"}
	for _, ns := range namespaces {
		if ns.kind == unix.CLONE_NEWPID {
			thread = append(thread, ns)
			continue
		}
		args = append(args, "--"+nsenterFlags[ns.kind]+"="+ns.path)
	}
	args = append(append(args, "--wdns="+cmd.Dir, "--", cmd.Path), cmd.Args[1:]...)
	cmd.Path, cmd.Args, cmd.Dir = nsenter, args, "/"
	return thread, nil
}

// nsenterFlags are nsenter's options for the namespaces of each type.
var nsenterFlags = map[int]string{
	unix.CLONE_NEWUSER: "user", unix.CLONE_NEWNS: "mount", unix.CLONE_NEWNET: "net",
	unix.CLONE_NEWUTS: "uts", unix.CLONE_NEWIPC: "ipc", unix.CLONE_NEWCGROUP: "cgroup",
	unix.CLONE_NEWTIME: "time",
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// InThread runs fn on an OS thread of its own, which the Go runtime discards when fn returns:
// fn may move the thread into other namespaces (setns, unshare), and the programs it starts
// inherit them. The thread is never the main thread, whose namespaces /proc/self shows.
func InThread(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread: hold it while another goroutine gets a thread of its own.
			done <- InThread(fn)
			runtime.UnlockOSThread()
			return
		}
		// Never unlocked: the runtime ends the thread with this goroutine.
		done <- fn()
	}()
	return <-done
}

// ErrNoCgroup2 is returned by Cgroup2Root when no cgroup v2 hierarchy is mounted.
var ErrNoCgroup2 = errors.New("no cgroup v2 hierarchy is mounted")

// Cgroup2Root returns where the cgroup v2 hierarchy is mounted: /sys/fs/cgroup on a unified
// host, /sys/fs/cgroup/unified on a hybrid one.
func Cgroup2Root() (string, error) {
	for _, dir := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return dir, nil
		}
	}
	return "", ErrNoCgroup2
}
