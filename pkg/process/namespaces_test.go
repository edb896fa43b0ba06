package process

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
)

// newNetNS makes a network namespace persisted at a file of a private temporary directory, and
// removes it when the test ends. It needs root.
func newNetNS(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "net")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := InThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return err
		}
		return unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, "")
	})
	if err != nil {
		t.Fatalf("making a network namespace: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(path, unix.MNT_DETACH) })
	return path
}

func TestStartRunsTheProcessInItsNetworkNamespaceAndCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("namespaces and cgroups are made by root: run the tests as root (real nodes need it)")
	}
	root, err := Cgroup2Root()
	if err != nil {
		t.Skip("this host mounts no cgroup v2 hierarchy, which Spec.Cgroup needs")
	}
	g := NewWithT(t)
	ctx := testContext(t)
	s := newKeeper(t)
	ns := newNetNS(t)
	cgroup := filepath.Join(root, "flotilla-test-"+strings.ToLower(filepath.Base(t.TempDir())))
	g.Expect(os.Mkdir(cgroup, 0o755)).To(Succeed())
	t.Cleanup(func() { _ = os.Remove(cgroup) })

	spec := sleepSpec(t, "inside")
	spec.Namespaces, spec.Cgroup = []string{ns}, cgroup
	p, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = s.Stop(ctx, "inside", 0) })

	var want, got unix.Stat_t
	g.Expect(unix.Stat(ns, &want)).To(Succeed())
	g.Expect(unix.Stat("/proc/"+strconv.Itoa(p.PID)+"/ns/net", &got)).To(Succeed())
	g.Expect(got.Ino).To(Equal(want.Ino), "the process runs in the namespace")
	var mine unix.Stat_t
	g.Expect(unix.Stat("/proc/self/ns/net", &mine)).To(Succeed())
	g.Expect(mine.Ino).NotTo(Equal(want.Ino), "the starter stays where it was")

	procs, err := os.ReadFile(filepath.Join(cgroup, "cgroup.procs"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Fields(string(procs))).To(ContainElement(strconv.Itoa(p.PID)), "the process starts in the cgroup")

	again, err := s.Ensure(ctx, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Adopted).To(BeTrue(), "the same namespace and cgroup adopt the process")
	elsewhere := spec
	elsewhere.Namespaces = nil
	g.Expect(s.Differs(elsewhere)).To(BeTrue(), "another namespace restarts it")
}
