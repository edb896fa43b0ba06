package realnode

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

// A node's namespaces are kept by files on which the namespace is bind-mounted (as `ip netns`
// keeps network namespaces), so that they outlive the processes in them and a process started
// later joins them (process.Spec.NetNS, MountNS).

// hostDirs are directories of the host that the node's mount namespace covers with a tmpfs of
// its own: kubelet's symbolic links to container logs (/var/log/containers, a path it does not
// let be configured) and the CNI result cache (/var/lib/cni, likewise). A directory missing on
// the host is created for the mount point, recorded under RuntimeRoot/created, and removed with
// the last node.
var hostDirs = []string{"/var/log", "/var/lib/cni"}

// createdRecord is where a host directory the nodes created is recorded.
func createdRecord(dir string) string {
	return filepath.Join(RuntimeRoot, "created", strings.ReplaceAll(strings.Trim(dir, "/"), "/", "_"))
}

// kept reports whether path keeps a namespace: a bind mount of nsfs.
func kept(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC
}

// ensureNetNS makes the node's network namespace, kept at l.netNS(), unless it exists.
func ensureNetNS(l layout) error {
	if kept(l.netNS()) {
		return nil
	}
	if err := ensureHostDir(filepath.Dir(l.netNS()), 0o755); err != nil {
		return err
	}
	if err := touch(l.netNS()); err != nil {
		return err
	}
	err := process.InThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("making a network namespace: %w", err)
		}
		return unix.Mount("/proc/thread-self/ns/net", l.netNS(), "", unix.MS_BIND, "")
	})
	if err != nil {
		return fmt.Errorf("making the network namespace %s: %w", l.netNS(), err)
	}
	return nil
}

// ensureMountNS makes the node's mount namespace, kept at l.mountNS(), unless it exists. It is a
// copy of the host's in which mounts propagate from the host but not back (slave), with a tmpfs on
// each of hostDirs, the files of l.sysctlDir() over the kernel settings kubelet reads
// (kernelSettings), which Ensure writes first, and kubelet's root directory at its short path.
func ensureMountNS(l layout) error {
	if kept(l.mountNS()) {
		return nil
	}
	if err := ensurePrivateMount(mountNSDir); err != nil {
		return err
	}
	for _, dir := range hostDirs {
		if err := ensureHostDir(dir, 0o755); err != nil {
			return err
		}
	}
	if err := touch(l.mountNS()); err != nil {
		return err
	}
	// The namespace is made on a thread of its own, and bound to its file from this thread,
	// which is in the host's namespace: bound from inside, the file would not be seen outside.
	tids := make(chan int, 1)
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- process.InThread(func() error {
			if err := setUpMountNS(l); err != nil {
				return err
			}
			tids <- unix.Gettid()
			<-release
			return nil
		})
	}()
	select {
	case err := <-done:
		return fmt.Errorf("making the mount namespace of %s: %w", l.dir, err)
	case tid := <-tids:
		src := fmt.Sprintf("/proc/%d/task/%d/ns/mnt", os.Getpid(), tid)
		err := unix.Mount(src, l.mountNS(), "", unix.MS_BIND, "")
		close(release)
		if err := errors.Join(err, <-done); err != nil {
			return fmt.Errorf("keeping the mount namespace of %s at %s: %w", l.dir, l.mountNS(), err)
		}
		return nil
	}
}

// setUpMountNS moves the calling thread into a new mount namespace and sets it up.
func setUpMountNS(l layout) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unsharing the mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("making / a slave mount: %w", err)
	}
	for _, dir := range hostDirs {
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
			return fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
		}
	}
	for name := range kernelSettings {
		if err := unix.Mount(l.sysctlFile(name), filepath.Join("/proc/sys", name), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("covering /proc/sys/%s: %w", name, err)
		}
	}
	if err := unix.Mount(l.kubeletRoot(), l.kubeletRootMount(), "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("showing %s at %s: %w", l.kubeletRoot(), l.kubeletRootMount(), err)
	}
	return nil
}

// ensurePrivateMount makes dir a mount point of its own with private propagation.
func ensurePrivateMount(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	mounted, err := isMountPoint(dir)
	if err != nil || mounted {
		return err
	}
	if err := unix.Mount(dir, dir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind-mounting %s on itself: %w", dir, err)
	}
	if err := unix.Mount("", dir, "", unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making %s private: %w", dir, err)
	}
	return nil
}

// isMountPoint reports whether dir is a mount point in this program's mount namespace.
func isMountPoint(dir string) (bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, fmt.Errorf("reading the mount table: %w", err)
	}
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		if fields := strings.Fields(scanner.Text()); len(fields) > 4 && unescapeMountPath(fields[4]) == dir {
			return true, nil
		}
	}
	return false, scanner.Err()
}

// unescapeMountPath undoes the octal escapes of /proc/self/mountinfo (a space is \040).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ensureHostDir creates dir on the host when it is missing, and records that it did.
func ensureHostDir(dir string, mode os.FileMode) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(createdRecord(dir)), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(createdRecord(dir)), err)
	}
	if err := touch(createdRecord(dir)); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return nil
}

// touch creates path, empty, unless it exists.
func touch(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o444) //nolint:gosec // a namespace's mount point
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	return f.Close()
}

// releaseNamespaces unmounts and removes the files that keep the node's namespaces. Once no
// process is left in them, the kernel removes the namespaces with everything in them: mounts, the
// Pods' network namespaces, interfaces (the host end of the node's veth pair goes with its peer).
func releaseNamespaces(l layout) error {
	var errs []error
	for _, path := range []string{l.netNS(), l.mountNS()} {
		if kept(path) {
			if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", path, err))
				continue
			}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", path, err))
		}
	}
	return errors.Join(errs...)
}

// releaseHost removes what the nodes made on the host besides their own files, once no node
// is left: the private mount of mountNSDir, and the host directories they created.
func releaseHost() error {
	entries, err := os.ReadDir(mountNSDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("listing %s: %w", mountNSDir, err)
	}
	if len(entries) > 0 {
		return nil // other nodes remain
	}
	var errs []error
	if mounted, err := isMountPoint(mountNSDir); err != nil {
		errs = append(errs, err)
	} else if mounted {
		if err := unix.Unmount(mountNSDir, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mountNSDir, err))
		}
	}
	if err := os.Remove(mountNSDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("removing %s: %w", mountNSDir, err))
	}
	for _, dir := range append([]string{filepath.Dir(layout{}.netNS())}, hostDirs...) {
		if _, err := os.Stat(createdRecord(dir)); err != nil {
			continue
		}
		// Only when empty: someone else may have used it meanwhile.
		if err := os.Remove(dir); err == nil || errors.Is(err, fs.ErrNotExist) {
			_ = os.Remove(createdRecord(dir))
		}
	}
	_ = os.Remove(filepath.Join(RuntimeRoot, "created"))
	return errors.Join(errs...)
}
