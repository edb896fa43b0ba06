package realnode

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

// A node's cgroup is <hierarchy>/flotilla/<id> (layout.cgroup). In the cgroup v2 hierarchy its
// "system" child holds the node's processes from their start (process.Spec.Cgroup), and with
// them everything they start: shims, runc, and the containers as long as runc leaves them
// there. Killing the v2 group kills the whole node at once. kubelet's cgroupRoot is its "pods"
// child: in the v2 hierarchy on a unified host, in each cgroup v1 hierarchy on a hybrid one (as
// this machine's), where kubelet's cgroupfs driver puts the Pods; kubelet wants it to exist.

// hierarchies returns the cgroup v2 root and the mount points of the cgroup v1 hierarchies.
func hierarchies() (v2 string, v1 []string, err error) {
	if v2, err = process.Cgroup2Root(); err != nil {
		return "", nil, fmt.Errorf("real nodes need the cgroup v2 hierarchy to keep track of their processes: %w", err)
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", nil, fmt.Errorf("reading the mount table: %w", err)
	}
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		// "<id> <parent> <dev> <root> <mount point> <options> [optional...] - <fstype> <source> <super options>"
		fields := strings.Fields(scanner.Text())
		sep := slices.Index(fields, "-")
		if sep > 4 && sep+1 < len(fields) && fields[sep+1] == "cgroup" {
			v1 = append(v1, unescapeMountPath(fields[4]))
		}
	}
	return v2, v1, scanner.Err()
}

// ensureCgroups makes the node's cgroups, gives them to the node's root (base: the groups and
// their files, in which it makes the groups of its Pods), and returns the v2 group its processes
// start in.
func ensureCgroups(l layout, base uint32) (string, error) {
	v2, v1, err := hierarchies()
	if err != nil {
		return "", err
	}
	system := filepath.Join(v2, l.cgroup(), "system")
	if err := os.MkdirAll(system, 0o755); err != nil { //nolint:gosec // a cgroup's directory, as the kernel's tools expect
		return "", fmt.Errorf("creating cgroup %s: %w", system, err)
	}
	if len(v1) == 0 {
		// Unified: kubelet's Pods live in the v2 hierarchy, whose controllers it needs enabled
		// on the way down.
		if err := enableControllers(v2, l.cgroup()); err != nil {
			return "", err
		}
		pods := filepath.Join(v2, l.cgroup(), "pods")
		if err := os.MkdirAll(pods, 0o755); err != nil { //nolint:gosec // a cgroup's directory
			return "", fmt.Errorf("creating cgroup %s: %w", pods, err)
		}
	}
	groups := []string{filepath.Join(v2, l.cgroup()), system, filepath.Join(v2, l.cgroup(), "pods")}
	for _, root := range v1 {
		if err := mkdirCgroupV1(root, l.cgroup()+"/pods"); err != nil {
			return "", err
		}
		groups = append(groups, filepath.Join(root, l.cgroup(), "pods"))
	}
	for _, group := range groups {
		if _, err := os.Stat(group); err == nil {
			if err := chownGroup(base, group); err != nil {
				return "", err
			}
		}
	}
	return system, nil
}

// mkdirCgroupV1 creates the cgroup path under the v1 hierarchy root, level by level; a new
// cpuset group gets the CPUs and memory nodes of its parent, without which nothing can join it.
func mkdirCgroupV1(root, path string) error {
	dir := root
	for _, elem := range strings.Split(strings.Trim(path, "/"), "/") {
		parent := dir
		dir = filepath.Join(dir, elem)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) { //nolint:gosec // a cgroup's directory
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
			current, err := os.ReadFile(filepath.Join(dir, file))
			if err != nil || strings.TrimSpace(string(current)) != "" {
				continue // not a cpuset hierarchy, or set
			}
			inherited, err := os.ReadFile(filepath.Join(parent, file))
			if err != nil {
				return fmt.Errorf("reading %s: %w", filepath.Join(parent, file), err)
			}
			if err := os.WriteFile(filepath.Join(dir, file), inherited, 0o644); err != nil { //nolint:gosec // a cgroup file
				return fmt.Errorf("setting %s: %w", filepath.Join(dir, file), err)
			}
		}
	}
	return nil
}

// enableControllers enables, on each level of path below the v2 root, the controllers its
// parent has.
func enableControllers(root, path string) error {
	dir := root
	for _, elem := range strings.Split(strings.Trim(path, "/"), "/") {
		available, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
		if err != nil {
			return fmt.Errorf("reading the controllers of %s: %w", dir, err)
		}
		var enable []string
		for _, c := range strings.Fields(string(available)) {
			enable = append(enable, "+"+c)
		}
		if len(enable) > 0 {
			if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(strings.Join(enable, " ")), 0o644); err != nil { //nolint:gosec // a cgroup file
				return fmt.Errorf("enabling controllers in %s: %w", dir, err)
			}
		}
		dir = filepath.Join(dir, elem)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) { //nolint:gosec // a cgroup's directory
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// killCgroups kills every process of the node, in any of its cgroups, and waits until they are
// gone (up to 10 s).
func killCgroups(l layout) error {
	v2, v1, err := hierarchies()
	if err != nil {
		return err
	}
	roots := append([]string{v2}, v1...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := nodePIDs(roots, l.cgroup())
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes %v of node %s survive SIGKILL", pids, l.dir)
		}
		// cgroup.kill (Linux 5.14) kills the v2 subtree at once, forks in flight included.
		_ = os.WriteFile(filepath.Join(v2, l.cgroup(), "cgroup.kill"), []byte("1"), 0o644) //nolint:gosec // a cgroup file
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// nodePIDs lists the processes in the node's cgroups of every hierarchy.
func nodePIDs(roots []string, cgroup string) []int {
	var pids []int
	for _, root := range roots {
		_ = filepath.WalkDir(filepath.Join(root, cgroup), func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil //nolint:nilerr // a group that went away holds nothing
			}
			data, err := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			if err != nil {
				return nil //nolint:nilerr // likewise
			}
			for _, field := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(field); err == nil && !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// removeCgroups removes the node's cgroups in every hierarchy, deepest first, and the flotilla
// group above them once it is empty.
func removeCgroups(l layout) error {
	v2, v1, err := hierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, root := range append([]string{v2}, v1...) {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(root, l.cgroup()), func(path string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for _, dir := range slices.Backward(dirs) {
			if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dir, err))
			}
		}
		_ = os.Remove(filepath.Join(root, "flotilla")) // fails while other nodes use it
	}
	return errors.Join(errs...)
}

// nodeMemory returns the resident memory of the node's processes in its v2 "system" group
// (kubelet, containerd, kube-proxy, the shims: not the containers), by program name, in bytes.
func nodeMemory(l layout) (map[string]uint64, error) {
	v2, err := process.Cgroup2Root()
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, pid := range nodePIDs([]string{v2}, l.cgroup()+"/system") {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		if !slices.Contains([]string{"kubelet", "containerd", "kube-proxy", "containerd-shim"}, name) &&
			!strings.HasPrefix(name, "containerd-shim") {
			continue // a container that runc left in the group
		}
		out[name] += rss(pid)
	}
	return out, nil
}

// rss returns the resident set size of pid in bytes, 0 when unknown.
func rss(pid int) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			fields := strings.Fields(rest)
			if len(fields) > 0 {
				kb, _ := strconv.ParseUint(fields[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}
