package realnodetest

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"github.com/vishvananda/netlink"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// Binaries returns the binaries of version (a Supported version) with the node programs and the
// programs of Flotilla's images, or skips t, saying what is missing: root, the host's programs
// (realnode.Prerequisites) or the build.
func Binaries(t testing.TB, version string) binaries.Set {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real nodes make namespaces, cgroups and networks: run the tests as root")
	}
	if err := realnode.Prerequisites(); err != nil {
		t.Skipf("%v", err)
	}
	set, err := binaries.Find("", version)
	if err == nil {
		err = set.Check(append(append([]string(nil), binaries.NodeNames...), binaries.ImageNames...)...)
	}
	if err != nil {
		t.Skipf("the node programs of %s are not built (make node-binaries K8S_VERSION=%s): %v", version, version, err)
	}
	return set
}

// Mirror serves an image registry on loopback over plain HTTP until t ends, pushes Flotilla's
// images (built from the programs of set) to it under their mirror names, and returns it as a
// mirror: its host:port and connection.
func Mirror(t testing.TB, set binaries.Set) registryconn.Mirror {
	t.Helper()
	handler, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	m := registryconn.Mirror{Registry: strings.TrimPrefix(srv.URL, "http://"), Connection: registryconn.Config{PlainHTTP: true}}
	pushImages(t, set, m)
	return m
}

// SecureMirror is Mirror as a registry of the management cluster would be: over TLS with a CA
// of its own, with a user and password who may only pull, and the images below prefix.
func SecureMirror(t testing.TB, set binaries.Set, prefix string) registryconn.Mirror {
	t.Helper()
	r, err := charttest.StartSecureRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	m := registryconn.Mirror{Registry: r.Host + "/" + prefix, Connection: registryconn.Config{Username: r.Username, Password: r.Password, CAData: r.CAPEM}}
	pushImages(t, set, m)
	m.Connection.Username, m.Connection.Password = r.Puller, r.PullerPassword // the nodes may only pull
	return m
}

// pushImages builds Flotilla's images from the programs of set and pushes them to m under their
// mirror names.
func pushImages(t testing.TB, set binaries.Set, m registryconn.Mirror) {
	t.Helper()
	opts, err := bundle.RemoteOptions(m.Connection)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range ociimage.Flotilla {
		image, err := ociimage.Build(img, set.Path(img.Program), "")
		if err != nil {
			t.Fatal(err)
		}
		ref, err := ociimage.MirrorReference(m.Registry, img.Name)
		if err != nil {
			t.Fatal(err)
		}
		if err := ociimage.Push(context.Background(), ref, image, opts...); err != nil {
			t.Fatal(err)
		}
	}
}

// RecordImages records in home, as `flotilla image build` does, the digests of Flotilla's
// images built from the programs of set (those Mirror and SecureMirror push: the same programs
// give the same digests), and returns the node images pinned by them.
func RecordImages(t testing.TB, home string, set binaries.Set) realnode.NodeImages {
	t.Helper()
	record := ociimage.Record{}
	for _, img := range ociimage.Flotilla {
		image, err := ociimage.Build(img, set.Path(img.Program), "")
		if err != nil {
			t.Fatal(err)
		}
		digest, err := image.Digest()
		if err != nil {
			t.Fatal(err)
		}
		record[img.Name] = digest.String()
	}
	path := ociimage.RecordPath(home)
	if err := ociimage.RecordDigests(path, record); err != nil {
		t.Fatal(err)
	}
	read, err := ociimage.ReadRecord(path)
	if err != nil {
		t.Fatal(err)
	}
	images, err := realnode.PinnedImages(read)
	if err != nil {
		t.Fatal(err)
	}
	return images
}

// HostTraces lists what the real node name of the cluster in clusterDir has on this host: its
// processes (those with its directory in their command line), network namespace (which holds
// its iptables rules), mounts, veth and cgroups.
func HostTraces(clusterDir, name string) []string {
	nodeDir := filepath.Join(realnode.NodesDir(clusterDir), name)
	id := nodenet.NodeID(nodeDir)
	var traces []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p) //nolint:gosec // /proc
		if err == nil && bytes.Contains(cmdline, []byte(nodeDir)) {
			traces = append(traces, "process "+p+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	if _, err := os.Stat(filepath.Join("/run/netns", "flotilla-"+id)); err == nil {
		traces = append(traces, "network namespace flotilla-"+id)
	}
	if mounts, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(mounts), "\n") {
			if strings.Contains(line, id) || strings.Contains(line, nodeDir) {
				traces = append(traces, "mount "+line)
			}
		}
	}
	if _, err := netlink.LinkByName("flv-" + id); err == nil {
		traces = append(traces, "veth flv-"+id)
	}
	for _, pattern := range []string{"/sys/fs/cgroup/flotilla/" + id, "/sys/fs/cgroup/*/flotilla/" + id} {
		dirs, _ := filepath.Glob(pattern)
		for _, d := range dirs {
			traces = append(traces, "cgroup "+d)
		}
	}
	return traces
}

// ClusterTraces lists what the cluster in clusterDir has on this host besides its nodes: its
// bridge and its iptables rules.
func ClusterTraces(clusterDir string) []string {
	id := nodenet.ClusterID(clusterDir)
	var traces []string
	if _, err := netlink.LinkByName("flb-" + id); err == nil {
		traces = append(traces, "bridge flb-"+id)
	}
	rules, err := exec.Command("iptables-save").Output()
	if err != nil {
		return append(traces, "iptables-save: "+err.Error())
	}
	for _, line := range strings.Split(string(rules), "\n") {
		if strings.Contains(line, strings.ToUpper(id)) || strings.Contains(line, "flb-"+id) {
			traces = append(traces, "iptables "+line)
		}
	}
	return traces
}

// LogNodes logs the end of the logs of every real node of the cluster in clusterDir.
func LogNodes(t testing.TB, clusterDir string) {
	nodes, _ := os.ReadDir(realnode.NodesDir(clusterDir))
	for _, n := range nodes {
		if !n.IsDir() {
			continue
		}
		logs := filepath.Join(realnode.NodesDir(clusterDir), n.Name(), "logs")
		for _, name := range []string{binaries.Containerd, binaries.Kubelet, binaries.KubeProxy} {
			data, _ := os.ReadFile(filepath.Join(logs, name+".log")) //nolint:gosec // the test's own files
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			t.Logf("the end of %s's log on %s:\n%s", name, n.Name(), strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	}
}

// OnePod returns the one Pod of namespace that selector (a label selector) matches, other than the
// one named not and those being deleted.
func OnePod(ctx context.Context, g gomega.Gomega, cs kubernetes.Interface, namespace, selector, not string) *corev1.Pod {
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	var found []*corev1.Pod
	for i, p := range pods.Items {
		if p.Name != not && p.DeletionTimestamp == nil {
			found = append(found, &pods.Items[i])
		}
	}
	g.Expect(found).To(gomega.HaveLen(1), "one Pod %s in %s", selector, namespace)
	return found[0]
}

// PodReady reports whether the Pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// DisruptionReason is the reason of the Pod's DisruptionTarget condition, such as
// EvictionByEvictionAPI for a Pod a drain evicted; "" without one.
func DisruptionReason(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return c.Reason
		}
	}
	return ""
}
