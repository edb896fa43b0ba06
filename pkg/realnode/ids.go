package realnode

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/flotilla-dev/flotilla/pkg/filelock"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// A node's user namespace maps its ids 0 to idRange-1 to a range of the host's ids of its own,
// above any the host gives its users: root in the node (its processes, a privileged container)
// is an unprivileged user of the host, who owns the node's files and cgroups and nothing else.
const (
	// idRange is how many ids a node has: those of a Linux system and its containers' users.
	idRange = 1 << 16
	// idRanges is how many ranges there are, from firstIDRange on: the ids up to 2^31.
	firstIDRange, idRanges = 1 << 8, 1<<15 - 1<<8
)

// chooseIDs returns st with the first host id of the node's range: the one recorded, or a range
// no node of this host has (the owners of the nodes' cgroups), from one derived from the node's
// id on, claimed by the node's cgroup and recorded in its state under a lock of this host's
// nodes. A node whose cgroup is gone (the host restarted) keeps its range; a new node could take
// it meanwhile only by choosing it among 32512.
func chooseIDs(ctx context.Context, l layout, st state) (state, error) {
	if st.IDBase >= firstIDRange*idRange {
		return st, nil
	}
	unlock, err := filelock.Lock(ctx, filepath.Join(RuntimeRoot, "ids.lock"))
	if err != nil {
		return st, err
	}
	defer unlock()
	taken := map[uint32]bool{}
	v2, err := process.Cgroup2Root()
	if err != nil {
		return st, err
	}
	groups, _ := os.ReadDir(filepath.Join(v2, "flotilla"))
	for _, g := range groups {
		if fi, err := g.Info(); err == nil && g.IsDir() && g.Name() != l.id {
			if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
				taken[sys.Uid] = true
			}
		}
	}
	sum := sha256.Sum256([]byte(l.id))
	first := binary.BigEndian.Uint32(sum[:4]) % idRanges
	for i := range uint32(idRanges) {
		base := (firstIDRange + (first+i)%idRanges) * idRange
		if !taken[base] {
			// The node's cgroup, owned by its root, claims the range for the next choice.
			group := filepath.Join(v2, l.cgroup())
			if err := os.MkdirAll(group, 0o755); err != nil { //nolint:gosec // a cgroup's directory
				return st, fmt.Errorf("creating cgroup %s: %w", group, err)
			}
			if err := chown(base, group); err != nil {
				return st, err
			}
			st.IDBase = base
			return st, saveState(l.state(), st)
		}
	}
	return st, errors.New("no range of user ids is left for another real node")
}

// chown gives paths to the node's root, the host id base.
func chown(base uint32, paths ...string) error {
	for _, path := range paths {
		if err := os.Lchown(path, int(base), int(base)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("giving %s to the node's root: %w", path, err)
		}
	}
	return nil
}

// chownTree shifts the owners of dir and everything below it into the node's range (base + id:
// a file of the host's root becomes the node's root's, an image layer's file of user 65532 the
// node's user 65532), unless dir is the node's root's already: a new node's directory, or one
// made before nodes had a user namespace.
func chownTree(base uint32, dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok && sys.Uid == base {
		return nil
	}
	// dir itself last: it says the rest is done.
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		return shiftOwner(base, path)
	})
	if err != nil {
		return err
	}
	return shiftOwner(base, dir)
}

// shiftOwner moves the owner and group of path, when they are below idRange, into the node's
// range.
func shiftOwner(base uint32, path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || sys.Uid >= idRange || sys.Gid >= idRange {
		return nil
	}
	if err := os.Lchown(path, int(base+sys.Uid), int(base+sys.Gid)); err != nil {
		return fmt.Errorf("giving %s to the node's root: %w", path, err)
	}
	if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 && fi.Mode()&fs.ModeSymlink == 0 {
		return os.Chmod(path, fi.Mode()) // chown clears them
	}
	return nil
}

// chownGroup gives the cgroup dir and its files (not its children) to the node's root, so that
// its processes make the groups below and write their limits.
func chownGroup(base uint32, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing cgroup %s: %w", dir, err)
	}
	paths := []string{dir}
	for _, e := range entries {
		if !e.IsDir() {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return chown(base, paths...)
}
