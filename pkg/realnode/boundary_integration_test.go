package realnode_test

import (
	"bytes"
	"crypto/rand"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/internal/realnodetest"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
)

// TestAPodOnARealNodeReadsNothingOfTheHost is the attack of a tenant on the machine through a
// real node: a Pod with privileged, hostPID, hostNetwork, runAsUser 0 and a hostPath of /, whose
// container serves the folder of a secret of the host (as one in the Flotilla home) and the
// control plane's PKI through that mount, as in the first report of the node boundary. It
// serves nothing of them; seen from the container's own mount namespace, the hostPath shows
// the node's root, in which no file of the host's home, no host process (a sentinel started
// for the test) and no way to write into the host's folders are; the node's loopback has none
// of the host's servers.
func TestAPodOnARealNodeReadsNothingOfTheHost(t *testing.T) {
	tc := startCluster(t, realnodetest.Mirror)
	g := NewWithT(t)

	// What the host holds: a secret in a folder of the test (the Flotilla home's place), the
	// control plane's keys, a process, a server on the host's loopback.
	home := t.TempDir()
	secret := filepath.Join(home, "secrets", "admin.key")
	g.Expect(os.MkdirAll(filepath.Dir(secret), 0o700)).To(Succeed())
	g.Expect(os.WriteFile(secret, []byte("the host's secret\n"), 0o600)).To(Succeed())
	caKey := filepath.Join(tc.dir, "pki", "ca.key")
	g.Expect(caKey).To(BeAnExistingFile())
	mark := make([]byte, 4)
	_, _ = rand.Read(mark)
	sentinelArg := "1000." + strconv.Itoa(int(mark[0])<<16|int(mark[1])<<8|int(mark[2]))
	sentinel := exec.Command("sleep", sentinelArg)
	g.Expect(sentinel.Start()).To(Succeed())
	t.Cleanup(func() { _ = sentinel.Process.Kill(); _ = sentinel.Wait() })
	hostLoopback, err := net.Listen("tcp4", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = hostLoopback.Close() })

	node, _ := tc.joinNode(t, "n1")
	nodeNS := filepath.Join("/run/netns", "flotilla-"+nodenet.NodeID(node.Dir))
	port := 18000 + int(mark[3])
	attack := func(name, dir string) *corev1.Pod {
		return tc.runPod(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{realnode.SimulatedLabel: "false"},
				HostPID:      true, HostNetwork: true, HostIPC: true,
				Containers: []corev1.Container{{
					Name: "steal", Image: ociimage.HelloFlotilla.Name,
					Args: []string{"--listen=127.0.0.1:" + strconv.Itoa(port), "--dir=/host" + dir},
					SecurityContext: &corev1.SecurityContext{
						Privileged: ptr.To(true), RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0),
					},
					VolumeMounts: []corev1.VolumeMount{{Name: "host", MountPath: "/host"}},
				}},
				Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{
					HostPath: &corev1.HostPathVolumeSource{Path: "/"},
				}}},
			},
		})
	}
	pod := attack("steal", filepath.Dir(secret))

	t.Run("the container serves none of the host's files", func(t *testing.T) {
		g := NewWithT(t)
		url := "http://127.0.0.1:" + strconv.Itoa(port) + "/" + filepath.Base(secret)
		status, body, err := httpFrom(nodeNS, http.MethodGet, url)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(body).NotTo(ContainSubstring("the host's secret"))
		g.Expect(status).To(Equal(http.StatusNotFound), "%s: %s", url, body)
	})

	root := "/proc/" + strconv.Itoa(containerPID(t, pod.Status.ContainerStatuses[0].ContainerID)) + "/root"
	// inContainer runs fn on a thread in the container's mount namespace, whose root is the
	// container's: what fn reads and writes is what the container's root user would.
	inContainer := func(fn func() error) error {
		ns, err := os.Open(filepath.Join(filepath.Dir(root), "ns", "mnt"))
		if err != nil {
			return err
		}
		defer func() { _ = ns.Close() }()
		return process.InThread(func() error {
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				return err
			}
			if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNS); err != nil {
				return err
			}
			return fn()
		})
	}

	t.Run("through the hostPath /, no file of the host can be read", func(t *testing.T) {
		g := NewWithT(t)
		for _, path := range []string{secret, caKey, filepath.Join(tc.dir, "admin.kubeconfig")} {
			g.Expect(inContainer(func() error {
				_, err := os.ReadFile("/host" + path) //nolint:gosec // the attack
				return err
			})).To(MatchError(fs.ErrNotExist), path)
		}
		var entries []string
		g.Expect(inContainer(func() error {
			list, err := os.ReadDir("/host" + filepath.Dir(node.Dir))
			for _, e := range list {
				entries = append(entries, e.Name())
			}
			return err
		})).To(Succeed())
		g.Expect(entries).To(Equal([]string{"n1"}), "of the cluster's folder, the node sees its own only")
	})

	t.Run("through the hostPath /, nothing of the host can be written", func(t *testing.T) {
		g := NewWithT(t)
		// Folders of the host that the node's root has too (as its own, or the parents of its
		// own folder) may take the file; it must not reach the host.
		for _, dir := range []string{home, filepath.Dir(tc.dir), filepath.Dir(node.Dir), "/root", "/usr/local"} {
			planted := filepath.Join(dir, "planted-by-a-pod")
			err := inContainer(func() error {
				return os.WriteFile("/host"+planted, []byte("pwned"), 0o600) //nolint:gosec // the attack
			})
			t.Logf("writing %s: %v", planted, err)
			_, err = os.Stat(planted)
			g.Expect(err).To(MatchError(fs.ErrNotExist), "%s is not on the host", planted)
			_ = os.Remove(planted)
		}
		g.Expect(inContainer(func() error {
			return os.WriteFile("/host/usr/bin/planted-by-a-pod", []byte("pwned"), 0o600) //nolint:gosec // the attack
		})).To(MatchError(syscall.EROFS), "the host's programs are read-only")
	})

	t.Run("with hostPID, no host process can be seen", func(t *testing.T) {
		g := NewWithT(t)
		var cmdlines []string
		g.Expect(inContainer(func() error {
			procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
			for _, p := range procs {
				if data, err := os.ReadFile(p); err == nil { //nolint:gosec // the attack
					cmdlines = append(cmdlines, string(bytes.ReplaceAll(data, []byte{0}, []byte{' '})))
				}
			}
			return err
		})).To(Succeed())
		g.Expect(cmdlines).To(ContainElement(ContainSubstring("kubelet")), "the container sees its node's processes")
		g.Expect(cmdlines).NotTo(ContainElement(ContainSubstring(sentinelArg)), "nor the host's")
		g.Expect(cmdlines).NotTo(ContainElement(ContainSubstring("kube-apiserver")))
		t.Logf("the container sees %d processes", len(cmdlines))
	})

	t.Run("with hostNetwork, the host's loopback servers are not reachable", func(t *testing.T) {
		g := NewWithT(t)
		err := sendFrom(nodeNS, "tcp4", hostLoopback.Addr().String())
		g.Expect(err).To(MatchError(syscall.ECONNREFUSED))
	})

	t.Run("a container that asks for no seccomp profile runs under the runtime's default one", func(t *testing.T) {
		g := NewWithT(t)
		plain := tc.runPod(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "plain", Namespace: "default"},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{realnode.SimulatedLabel: "false"},
				Containers:   []corev1.Container{{Name: "web", Image: ociimage.HelloFlotilla.Name}},
			},
		})
		status, err := os.ReadFile("/proc/" + strconv.Itoa(containerPID(t, plain.Status.ContainerStatuses[0].ContainerID)) + "/status")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(status)).To(MatchRegexp(`(?m)^Seccomp:\s+2$`), "filtered by seccomp")
	})

	t.Run("root in the container is an unprivileged user of the host", func(t *testing.T) {
		g := NewWithT(t)
		uidMap, err := os.ReadFile(filepath.Join(filepath.Dir(root), "uid_map"))
		g.Expect(err).NotTo(HaveOccurred())
		fields := strings.Fields(string(uidMap))
		g.Expect(fields).To(HaveLen(3), "one range: %s", uidMap)
		g.Expect(fields[0]).To(Equal("0"))
		g.Expect(fields[1]).NotTo(Equal("0"), "the node's root is not the host's")
		g.Expect(fields[2]).To(Equal("65536"))
		status, err := os.ReadFile(filepath.Join(filepath.Dir(root), "status"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(status)).To(MatchRegexp(`(?m)^Uid:\s+`+fields[1]+`\s+`+fields[1]), "the container's root runs as host id %s", fields[1])
	})

	t.Run("the container's root, with the host's files in view, may do nothing the host's root may", func(t *testing.T) {
		g := NewWithT(t)
		// nsenter enters the container's user, PID, network, IPC and UTS namespaces, with every
		// capability of its root there, and stays in the host's mount namespace: what a
		// privileged container that escaped its node's root file system would hold.
		pid := strconv.Itoa(containerPID(t, pod.Status.ContainerStatuses[0].ContainerID))
		asNodeRoot := func(script string) (string, error) {
			out, err := exec.Command("nsenter", "--target", pid, "--user", "--pid", "--net", "--ipc", "--uts", "--",
				"/bin/sh", "-c", script).CombinedOutput()
			return string(out), err
		}
		out, err := asNodeRoot("id -u; grep CapEff /proc/self/status")
		g.Expect(err).NotTo(HaveOccurred(), out)
		g.Expect(out).To(HavePrefix("0\n"), "root of the node")
		g.Expect(out).To(MatchRegexp(`CapEff:\s+000001ffffffffff`), "with every capability")
		for script, want := range map[string]string{
			"cat " + secret: "Permission denied",
			"cat " + caKey:  "Permission denied",
			"echo pwned > " + filepath.Join(home, "planted"): "Permission denied",
			"echo '|/pwned' > /proc/sys/kernel/core_pattern": "Permission denied",
			"mknod /tmp/flotilla-disk-" + pid + " b 8 0":     "Operation not permitted",
			"mount -t tmpfs none /mnt":                       "permission denied",
			"kill -0 " + strconv.Itoa(sentinel.Process.Pid):  "",
		} {
			out, err := asNodeRoot(script)
			g.Expect(err).To(HaveOccurred(), "%s: %s", script, out)
			g.Expect(out).To(ContainSubstring(want), script)
		}
		g.Expect(filepath.Join(home, "planted")).NotTo(BeAnExistingFile())
		g.Expect(os.ReadFile("/proc/sys/kernel/core_pattern")).NotTo(ContainSubstring("pwned"))
	})

	t.Run("the hostPath / is the node's own root", func(t *testing.T) {
		g := NewWithT(t)
		var hostname []byte
		g.Expect(inContainer(func() error {
			hostname, err = os.ReadFile("/host/etc/hostname")
			return err
		})).To(Succeed())
		g.Expect(strings.TrimSpace(string(hostname))).To(Equal("n1"))
	})
}

// containerPID returns a process of the container whose ID is id (a Pod status's
// "containerd://<id>"), found by its cgroup.
func containerPID(t *testing.T, id string) int {
	t.Helper()
	pid, err := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(containerNetNS(t, id)))))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
