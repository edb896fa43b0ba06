package realnode

import (
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

func TestChooseAddressTakesTheLowestFreeAddressOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nodes := filepath.Join(t.TempDir(), "nodes")
	network := netip.MustParsePrefix("10.200.9.0/29") // gateway .1, nodes .2 to .6
	choose := func(name string) (state, error) {
		dir := filepath.Join(nodes, name)
		g.Expect(os.MkdirAll(dir, 0o700)).To(Succeed())
		l := newLayout(dir)
		st, err := loadState(l.state())
		g.Expect(err).NotTo(HaveOccurred())
		return chooseAddress(ctx, Config{Name: name, Dir: dir, Network: network}, l, st)
	}
	a, err := choose("a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a.Address).To(Equal("10.200.9.2"))
	b, err := choose("b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Address).To(Equal("10.200.9.3"), "another node takes the next address")
	again, err := choose("a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Address).To(Equal("10.200.9.2"), "a node keeps its address")
	for _, name := range []string{"c", "d", "e"} {
		_, err := choose(name)
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, err = choose("f")
	g.Expect(err).To(MatchError(ContainSubstring("the node network 10.200.9.0/29 has no address left")))
}

// failingProgram writes a program that exits at once with status 1.
func failingProgram(t *testing.T) string {
	t.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "crashes")
	if err := os.WriteFile(path, []byte("#!"+sh+"\necho dying >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestAProcessThatExitsWaitsOutItsBackOffWithTheEndOfItsLog(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	dir := t.TempDir()
	keeper := process.Keeper{RunDir: filepath.Join(dir, "run"), LogDir: filepath.Join(dir, "logs")}
	spec := process.Spec{Name: "kubelet", Path: failingProgram(t)}

	p, err := ensureProcess(ctx, keeper, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Started).To(BeTrue())
	g.Expect(p.PID).NotTo(BeZero())
	g.Expect(p.Failures).To(BeZero())
	g.Eventually(func() bool { _, running := keeper.Running("kubelet"); return running }, 5*time.Second, 20*time.Millisecond).Should(BeFalse())

	p, err = ensureProcess(ctx, keeper, spec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Started).To(BeFalse())
	g.Expect(p.PID).To(BeZero(), "it waits out its back-off")
	g.Expect(p.Failures).To(Equal(1))
	g.Expect(p.NextStart).To(BeTemporally(">", time.Now()))
	g.Expect(p.LogTail).To(ContainSubstring("dying"), "the end of its log says why")
	g.Expect(p.CrashLooping()).To(BeFalse(), "one failure is no crash loop")

	g.Eventually(func(g Gomega) {
		p, err = ensureProcess(ctx, keeper, spec)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Restarts).To(Equal(1), "it starts again once the back-off is over")
	}, 5*time.Second, 100*time.Millisecond).Should(Succeed())
}
