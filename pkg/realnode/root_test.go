package realnode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// TestANodesRootShowsOfTheHostOnlyItsProgramsAndItsOwnFiles reads the plan of a node's root: of
// the host it binds /usr and the node's binaries read-only, a few files of /etc read-only, the
// cgroup hierarchies and a few devices, and its own directory, runtime directory and kernel
// settings; nothing else of the Flotilla home (its cluster's keys, other nodes) nor of the host.
func TestANodesRootShowsOfTheHostOnlyItsProgramsAndItsOwnFiles(t *testing.T) {
	g := NewWithT(t)
	home := "/root/.flotilla"
	cfg := initConfig{Dir: home + "/clusters/c1/nodes/n1", Name: "n1", Binaries: "/root/.cache/flotilla/bin/v1.36.3"}
	l := newLayout(cfg.Dir)
	steps, err := rootSteps(cfg, l)
	g.Expect(err).NotTo(HaveOccurred())

	readOnly := []string{"/usr", "/etc/alternatives", "/etc/ld.so.cache"}
	for _, name := range binaries.NodeNames {
		readOnly = append(readOnly, filepath.Join(cfg.Binaries, name))
	}
	for _, name := range usrLinks {
		readOnly = append(readOnly, "/"+name) // where the host's are directories
	}
	writable := []string{cfg.Dir, l.runtimeDir(), l.kubeletRoot(), "/sys/fs/cgroup"}
	for _, name := range hostDevices {
		writable = append(writable, "/dev/"+name)
	}
	for name := range kernelSettings {
		writable = append(writable, l.sysctlFile(name))
	}
	var mounted []string
	for _, s := range steps {
		mounted = append(mounted, s.Target)
		if s.Bind == "" {
			continue
		}
		if s.ReadOnly {
			g.Expect(readOnly).To(ContainElement(s.Bind), "%s is bound read-only", s.Bind)
		} else {
			g.Expect(writable).To(ContainElement(s.Bind), "%s is bound writable", s.Bind)
		}
		g.Expect(s.Bind == cfg.Dir || !strings.HasPrefix(s.Bind, home+"/") || strings.HasPrefix(s.Bind, cfg.Dir+"/")).
			To(BeTrue(), "of the Flotilla home, %s shows only the node's own directory", s.Bind)
		if s.Bind != l.kubeletRoot() && s.Bind != "/sys/fs/cgroup" && !strings.HasPrefix(s.Bind, l.sysctlDir()) {
			g.Expect(s.Target).To(Equal(s.Bind), "%s is at the same path in the node's root", s.Bind)
		}
	}
	g.Expect(mounted).To(ContainElements("/proc", "/sys", "/dev", "/etc/hostname", "/tmp", "/var/log", "/var/lib/cni"))
	g.Expect(mounted).To(ContainElement(filepath.Join(cfg.Binaries, "kubelet")))
	g.Expect(mounted).NotTo(ContainElement(filepath.Join(cfg.Binaries, "kube-apiserver")), "the node's programs only")
	g.Expect(filepath.Dir(l.rootfs())).To(Equal(l.runtimeDir()))
}

// TestTheInitBindsNoLinkTheNodeMade replaces kubelet's root directory, which is the node's, by a
// link to a folder of the host, as the node's root could: the init refuses to open it, and
// opens the directory it should be.
func TestTheInitBindsNoLinkTheNodeMade(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	secrets := filepath.Join(dir, "home")
	g.Expect(os.Mkdir(secrets, 0o700)).To(Succeed())
	l := newLayout(filepath.Join(dir, "nodes", "n1"))
	g.Expect(os.MkdirAll(l.kubeletDir(), 0o700)).To(Succeed())
	g.Expect(os.Symlink(secrets, l.kubeletRoot())).To(Succeed())

	_, err := openNoFollow(l.kubeletRoot())
	g.Expect(err).To(HaveOccurred(), "a link is refused")

	g.Expect(os.Remove(l.kubeletRoot())).To(Succeed())
	g.Expect(os.Mkdir(l.kubeletRoot(), 0o700)).To(Succeed())
	f, err := openNoFollow(l.kubeletRoot())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(f.Close()).To(Succeed())
}
