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
)

// A node's namespaces are kept by files on which the namespace is bind-mounted (as `ip netns`
// keeps network namespaces), so that they outlive the processes in them and a process started
// later joins them (process.Spec.Namespaces). The node's init makes them all (ensureInit); the
// network namespace is kept at /run/netns (`ip netns` lists it), the others under mountNSDir.

// createdRecord is where a host directory the nodes created is recorded, so that the last node
// removes it.
func createdRecord(dir string) string {
	return filepath.Join(RuntimeRoot, "created", strings.ReplaceAll(strings.Trim(dir, "/"), "/", "_"))
}

// kept reports whether path keeps a namespace: a bind mount of nsfs.
func kept(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.NSFS_MAGIC
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

// releaseNamespaces unmounts and removes the files that keep namespaces of a node. Once no
// process is left in them, the kernel removes the namespaces with everything in them: mounts, the
// Pods' network namespaces, interfaces (the host end of the node's veth pair goes with its peer).
func releaseNamespaces(paths ...string) error {
	var errs []error
	for _, path := range paths {
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
// is left: the private mount of mountNSDir, and the host directory they created (/run/netns).
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
	for _, dir := range []string{filepath.Dir(layout{}.netNS())} {
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
