package realnode

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
)

func owner(g Gomega, path string) (uint32, uint32) {
	fi, err := os.Lstat(path)
	g.Expect(err).NotTo(HaveOccurred())
	sys := fi.Sys().(*syscall.Stat_t)
	return sys.Uid, sys.Gid
}

// TestANodesFilesMoveIntoItsRangeOfIDsOnce makes a node's directory as a node made before
// nodes had user namespaces left it (the host's root's files, an image layer's file of user
// 65532) and gives it to the node's range: each owner moves by the range's base, and a
// second pass changes nothing.
func TestANodesFilesMoveIntoItsRangeOfIDsOnce(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving files to other users needs root")
	}
	g := NewWithT(t)
	const base = 300 * idRange
	dir := filepath.Join(t.TempDir(), "n1")
	layer := filepath.Join(dir, "containerd", "root", "hello-flotilla")
	g.Expect(os.MkdirAll(filepath.Dir(layer), 0o700)).To(Succeed())
	g.Expect(os.WriteFile(layer, []byte("x"), 0o755)).To(Succeed())
	g.Expect(os.Lchown(layer, 65532, 65532)).To(Succeed())
	g.Expect(os.Chmod(layer, 0o755|os.ModeSetuid)).To(Succeed()) // after: chown clears it
	g.Expect(os.Symlink("hello-flotilla", layer+".link")).To(Succeed())

	g.Expect(chownTree(base, dir)).To(Succeed())
	for _, path := range []string{dir, filepath.Dir(layer), layer + ".link"} {
		uid, gid := owner(g, path)
		g.Expect([]uint32{uid, gid}).To(Equal([]uint32{base, base}), path)
	}
	uid, gid := owner(g, layer)
	g.Expect([]uint32{uid, gid}).To(Equal([]uint32{base + 65532, base + 65532}))
	fi, err := os.Stat(layer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode()&os.ModeSetuid).NotTo(BeZero(), "the set-user-ID bit stays")

	g.Expect(chownTree(base, dir)).To(Succeed())
	uid, _ = owner(g, layer)
	g.Expect(uid).To(Equal(uint32(base+65532)), "once")
}
