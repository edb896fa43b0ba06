package realnode_test

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/net/dns/dnsmessage"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/internal/realnodetest"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
)

// failFast is how soon a connection off the node network must fail: at once, from the kernel's
// own "no route" or from an ICMP error sent back into the node network, never by a timeout.
const failFast = time.Second

// icmpInterval separates the attempts that an ICMP error ends: the kernel sends one address
// about one ICMP error a second after a short burst (net.ipv4.icmp_ratelimit, and the cost of
// an unroutable packet), and an attempt whose error it held back would wait for a timeout.
const icmpInterval = 2 * time.Second

// TestPodsReachOnlyTheirClusterAndNothingLeavesTheMachine attacks the network rule of real nodes
// (no traffic leaves the machine) from a Pod's network namespace and from its node's, as root
// there: connections to a public address, to the host's way out (its default gateway) and to a
// server of the host listening on every address fail at once, and host-wide iptables counters
// show that no packet reached the host from the node network for them, nor left the host.
// The cluster's API server, through the kubernetes Service, and CoreDNS answer; CoreDNS answers
// the cluster's names and refuses the others, asking no one. With the node's routes subverted
// (a default route to the host, as a privileged Pod of the host network could add) and a host
// that forwards packets, the host rejects what the node's namespace sends elsewhere.
func TestPodsReachOnlyTheirClusterAndNothingLeavesTheMachine(t *testing.T) {
	tc := startCluster(t, realnodetest.Mirror)
	g := NewWithT(t)
	ctx := context.Background()
	node, _ := tc.joinNode(t, "n1")
	pod := tc.runPod(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{realnode.SimulatedLabel: "false"},
			Containers:   []corev1.Container{{Name: "web", Image: ociimage.HelloFlotilla.Name}},
		},
	})
	g.Eventually(func(g Gomega) {
		coredns := &appsv1.Deployment{}
		g.Expect(tc.c.Get(ctx, ctrlclient.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "coredns"}, coredns)).To(Succeed())
		g.Expect(coredns.Status.ReadyReplicas).To(Equal(int32(1)))
	}, 60*time.Second, 500*time.Millisecond).Should(Succeed())
	kubernetesService := &corev1.Service{}
	g.Expect(tc.c.Get(ctx, ctrlclient.ObjectKey{Namespace: "default", Name: "kubernetes"}, kubernetesService)).To(Succeed())

	bridge := nodenet.Cluster{ID: nodenet.ClusterID(tc.dir)}.Bridge()
	gateway := tc.status.NodeNetwork.Masked().Addr().Next()
	nodeNS := filepath.Join("/run/netns", "flotilla-"+nodenet.NodeID(node.Dir))
	podNS := containerNetNS(t, pod.Status.ContainerStatuses[0].ContainerID)
	hostAddr, wayOut := hostAddresses(t)
	t.Logf("host address %s, default gateway %s, node network %s on %s", hostAddr, wayOut, tc.status.NodeNetwork, bridge)

	// A server of the host on every address: nothing of the cluster may reach it.
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = ln.Close() })
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = conn.Close()
		}
	}()
	hostPort := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	public := "1.1.1.1:53"
	router := net.JoinHostPort(wayOut.String(), "80")
	hostServer := net.JoinHostPort(hostAddr.String(), hostPort)
	gatewayServer := net.JoinHostPort(gateway.String(), hostPort)
	// Packets from the node network that reach the host for an address off it, and packets
	// that leave the host for the addresses off the machine, whoever sends them.
	arriving := newPacketCounter(t, "PREROUTING", "-i "+bridge, public, router, hostServer, "udp:0.0.0.0/0:53")
	leaving := newPacketCounter(t, "POSTROUTING", "", public, router)
	expectNothingSent := func(g Gomega) {
		g.Expect(leaving.counts()).To(Equal([]int{0, 0}), "no packet left the host for %s or %s", public, router)
		g.Expect(accepted.Load()).To(BeZero(), "the host's server accepted no connection")
	}

	t.Run("from the node's namespace, the way off the node network is prohibited", func(t *testing.T) {
		g := NewWithT(t)
		for _, target := range []string{public, router, hostServer} {
			for _, network := range []string{"tcp4", "udp4"} {
				err := sendFrom(nodeNS, network, target)
				g.Expect(err).To(MatchError(syscall.EACCES), "%s %s", network, target)
			}
		}
		g.Expect(arriving.counts()).To(Equal([]int{0, 0, 0, 0}), "nothing reached the host")
		expectNothingSent(g)
	})

	t.Run("from the Pod, addresses off the node network fail at once, and the cluster's API server answers", func(t *testing.T) {
		g := NewWithT(t)
		attempts := []struct {
			network, target string
			want            OmegaMatcher
		}{
			{"tcp4", public, MatchError(syscall.EHOSTUNREACH)}, // "administratively prohibited", from the node
			{"udp4", public, MatchError(syscall.EHOSTUNREACH)},
			{"tcp4", router, MatchError(syscall.EHOSTUNREACH)},
			{"tcp4", hostServer, MatchError(syscall.EHOSTUNREACH)},
			{"tcp4", gatewayServer, MatchError(syscall.ECONNREFUSED)}, // the host refuses what it does not forward
		}
		for i, a := range attempts {
			if i > 0 {
				time.Sleep(icmpInterval)
			}
			start := time.Now()
			err := sendFrom(podNS, a.network, a.target)
			took := time.Since(start)
			g.Expect(err).To(a.want, "%s %s", a.network, a.target)
			g.Expect(took).To(BeNumerically("<", failFast), "%s %s failed after %s", a.network, a.target, took)
			t.Logf("%s %s failed after %s: %v", a.network, a.target, took.Round(time.Microsecond), err)
		}
		g.Expect(arriving.counts()).To(Equal([]int{0, 0, 0, 0}), "nothing for an address off the node network reached the host")
		expectNothingSent(g)

		api := net.JoinHostPort(kubernetesService.Spec.ClusterIP, "443")
		state, err := tlsFrom(podNS, api, tc.ca, "kubernetes.default.svc")
		g.Expect(err).NotTo(HaveOccurred(), "the kubernetes Service leads to the cluster's API server")
		g.Expect(state.PeerCertificates[0].DNSNames).To(ContainElement("kubernetes.default.svc"))
	})

	t.Run("the image mirror lets the Pod and the node pull, and neither push nor delete what other clusters pull", func(t *testing.T) {
		g := NewWithT(t)
		_, mirrorPort, err := net.SplitHostPort(tc.mirror.Registry)
		g.Expect(err).NotTo(HaveOccurred())
		repository, tag, _, err := ociimage.MirrorPath(ociimage.HelloFlotilla.Name)
		g.Expect(err).NotTo(HaveOccurred())
		manifest := "/v2/" + repository + "/manifests/" + tag
		for _, from := range []struct{ ns, mirror string }{
			{podNS, net.JoinHostPort(gateway.String(), mirrorPort)}, // a tenant's Pod, at the gateway
			{nodeNS, tc.mirror.Registry},                            // containerd's way: the node's loopback forward
		} {
			status, _, err := httpFrom(from.ns, http.MethodGet, "http://"+from.mirror+manifest)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(status).To(Equal(http.StatusOK), "%s pulls hello-flotilla's manifest", from.ns)
			for _, method := range []string{http.MethodPut, http.MethodDelete} {
				status, body, err := httpFrom(from.ns, method, "http://"+from.mirror+manifest)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(status).To(Equal(http.StatusForbidden), "%s %s from %s: %s", method, manifest, from.ns, body)
				g.Expect(body).To(ContainSubstring("may only pull"))
			}
		}
	})

	t.Run("CoreDNS answers the cluster's names, NXDOMAIN for unknown names of its zones, REFUSED for the others, and asks no one", func(t *testing.T) {
		g := NewWithT(t)
		dns := net.JoinHostPort(tc.dns.String(), "53")
		answer, err := queryFrom(podNS, dns, "kubernetes.default.svc.cluster.local.", dnsmessage.TypeA)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(answer.RCode).To(Equal(dnsmessage.RCodeSuccess))
		g.Expect(answer.Answers).To(HaveLen(1))
		a, ok := answer.Answers[0].Body.(*dnsmessage.AResource)
		g.Expect(ok).To(BeTrue())
		g.Expect(netip.AddrFrom4(a.A).String()).To(Equal(kubernetesService.Spec.ClusterIP))
		for name, want := range map[string]dnsmessage.RCode{
			"nothing.default.svc.cluster.local.": dnsmessage.RCodeNameError,
			"1.1.1.1.in-addr.arpa.":              dnsmessage.RCodeNameError,
			"example.com.":                       dnsmessage.RCodeRefused,
			"flotilla.dev.":                      dnsmessage.RCodeRefused,
		} {
			qtype := dnsmessage.TypeA
			if strings.HasSuffix(name, ".arpa.") {
				qtype = dnsmessage.TypePTR
			}
			answer, err := queryFrom(podNS, dns, name, qtype)
			g.Expect(err).NotTo(HaveOccurred(), name)
			g.Expect(answer.RCode).To(Equal(want), name)
			g.Expect(answer.Answers).To(BeEmpty(), name)
		}
		g.Expect(arriving.counts()).To(Equal([]int{0, 0, 0, 0}), "no DNS query reached the host from the node network")
		expectNothingSent(g)
	})

	t.Run("with a default route out of the node's namespace and a host that forwards, the host rejects what the node sends elsewhere", func(t *testing.T) {
		g := NewWithT(t)
		subvertRoutes(t, nodeNS, bridge, gateway)
		rejectedBefore := rejectedForwards(t, tc.dir)
		attempts := []struct {
			target string
			want   OmegaMatcher
		}{
			{public, MatchError(syscall.ENETUNREACH)}, // "network prohibited", from the host's FORWARD rules
			{router, MatchError(syscall.ENETUNREACH)},
			{hostServer, MatchError(syscall.ECONNREFUSED)}, // from the host's INPUT rules
		}
		for i, a := range attempts {
			if i > 0 {
				time.Sleep(icmpInterval)
			}
			start := time.Now()
			err := sendFrom(nodeNS, "tcp4", a.target)
			took := time.Since(start)
			g.Expect(err).To(a.want, a.target)
			g.Expect(took).To(BeNumerically("<", failFast), "%s failed after %s", a.target, took)
			t.Logf("tcp4 %s failed after %s: %v", a.target, took.Round(time.Microsecond), err)
		}
		counts := arriving.counts()
		g.Expect(counts[:3]).To(HaveEach(BeNumerically(">", 0)), "this time the packets reached the host: %v", counts)
		g.Expect(rejectedForwards(t, tc.dir)-rejectedBefore).To(BeNumerically(">=", 2), "the cluster's FORWARD rule rejected them")
		expectNothingSent(g)

		_, err := realnode.Ensure(ctx, node)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(sendFrom(nodeNS, "tcp4", public)).To(MatchError(syscall.EACCES), "Ensure prohibits the way out again")
	})
}

// rejectedForwards returns how many packets the FORWARD rules of the cluster in clusterDir
// rejected.
func rejectedForwards(t *testing.T, clusterDir string) int {
	t.Helper()
	chain := "FLOTILLA-" + strings.ToUpper(nodenet.ClusterID(clusterDir)) + "-FWD"
	out, err := exec.Command("iptables", "-w", "-L", chain, "-n", "-v", "-x").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables -L %s: %v: %s", chain, err, out)
	}
	rejected := 0
	for _, line := range strings.Split(string(out), "\n") {
		if fields := strings.Fields(line); len(fields) > 2 && fields[2] == "REJECT" {
			n, _ := strconv.Atoi(fields[0])
			rejected += n
		}
	}
	return rejected
}

// containerNetNS returns the network namespace of the container whose ID is id (a Pod status's
// "containerd://<id>"), through one of its processes, found by its cgroup.
func containerNetNS(t *testing.T, id string) string {
	t.Helper()
	id = strings.TrimPrefix(id, "containerd://")
	procs, err := filepath.Glob("/proc/[0-9]*/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		data, err := os.ReadFile(p) //nolint:gosec // /proc
		if err == nil && strings.Contains(string(data), id) {
			return filepath.Join(filepath.Dir(p), "ns", "net")
		}
	}
	t.Fatalf("no process of container %s", id)
	return ""
}

// hostAddresses returns an IPv4 address of this host that is not loopback nor on an interface of
// real nodes, and the gateway of its default route (192.0.2.1, a documentation address, when it
// has none), or skips t when the host has no such address.
func hostAddresses(t *testing.T) (addr, gateway netip.Addr) {
	t.Helper()
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		link, err := netlink.LinkByIndex(a.LinkIndex)
		if err != nil || strings.HasPrefix(link.Attrs().Name, "fl") {
			continue
		}
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok && !ip.IsLoopback() {
			addr = ip
			break
		}
	}
	if !addr.IsValid() {
		t.Skip("this host has no IPv4 address besides loopback to attack")
	}
	gateway = netip.MustParseAddr("192.0.2.1")
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range routes {
		if ones := 0; r.Dst != nil {
			ones, _ = r.Dst.Mask.Size()
			if ones != 0 {
				continue
			}
		}
		if gw, ok := netip.AddrFromSlice(r.Gw.To4()); ok {
			gateway = gw
		}
	}
	return addr, gateway
}

// inNetNS runs fn on a thread in the network namespace at path: the sockets it opens are there.
func inNetNS(path string, fn func() error) error {
	ns, err := netns.GetFromPath(path)
	if err != nil {
		return err
	}
	defer func() { _ = ns.Close() }()
	return process.InThread(func() error {
		if err := netns.Set(ns); err != nil {
			return err
		}
		return fn()
	})
}

// sendFrom connects to target from the network namespace at ns and, over UDP, sends a datagram
// and waits for an answer; it returns the error that ended the attempt, nil when it went
// through (tcp) or was answered (udp).
func sendFrom(ns, network, target string) error {
	return inNetNS(ns, func() error {
		conn, err := net.DialTimeout(network, target, 10*time.Second)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }()
		if network == "tcp4" {
			return nil
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := conn.Write([]byte("flotilla")); err != nil {
			return err
		}
		_, err = conn.Read(make([]byte, 512))
		return err
	})
}

// tlsFrom makes a TLS connection to target from the network namespace at ns, verifying the
// server's certificate for serverName with ca.
func tlsFrom(ns, target string, ca []byte, serverName string) (tls.ConnectionState, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	var state tls.ConnectionState
	err := inNetNS(ns, func() error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp4", target, &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS12})
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }()
		state = conn.ConnectionState()
		return nil
	})
	return state, err
}

// httpFrom sends an HTTP request without a body from the network namespace at ns and returns
// the answer's status and body.
func httpFrom(ns, method, url string) (int, string, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
			err = inNetNS(ns, func() error {
				conn, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return conn, err
		},
	}}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// queryFrom asks the DNS server at server for name over UDP from the network namespace at ns.
func queryFrom(ns, server, name string, qtype dnsmessage.Type) (*dnsmessage.Message, error) {
	q := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: 4242, RecursionDesired: true},
		Questions: []dnsmessage.Question{{Name: dnsmessage.MustNewName(name), Type: qtype, Class: dnsmessage.ClassINET}},
	}
	packed, err := q.Pack()
	if err != nil {
		return nil, err
	}
	answer := &dnsmessage.Message{}
	err = inNetNS(ns, func() error {
		conn, err := net.DialTimeout("udp4", server, 5*time.Second)
		if err != nil {
			return err
		}
		defer func() { _ = conn.Close() }()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := conn.Write(packed); err != nil {
			return err
		}
		buf := make([]byte, 1500)
		n, err := conn.Read(buf)
		if err != nil {
			return err
		}
		return answer.Unpack(buf[:n])
	})
	return answer, err
}

// subvertRoutes replaces the default route of the node's namespace with one to the host through
// the bridge, and makes the host forward what comes from the bridge (until t ends): what a
// privileged Pod of the host network, and a host that routes, would allow.
func subvertRoutes(t *testing.T, nodeNS, bridge string, gateway netip.Addr) {
	t.Helper()
	ns, err := netns.GetFromPath(nodeNS)
	if err != nil {
		t.Fatal(err)
	}
	h, err := netlink.NewHandleAt(ns)
	_ = ns.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	eth0, err := h.LinkByName(nodenet.NodeInterface)
	if err != nil {
		t.Fatal(err)
	}
	route := &netlink.Route{LinkIndex: eth0.Attrs().Index, Gw: gateway.AsSlice()}
	if err := h.RouteReplace(route); err != nil {
		t.Fatal(err)
	}
	forwarding := "/proc/sys/net/ipv4/conf/" + bridge + "/forwarding"
	if err := os.WriteFile(forwarding, []byte("1"), 0o644); err != nil { //nolint:gosec // a sysctl
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.WriteFile(forwarding, []byte("0"), 0o644) }) //nolint:gosec // a sysctl
}

// packetCounter counts packets in a chain of the host's mangle table of its own, jumped to from
// a built-in chain, with one rule per target: "host:port" for TCP and UDP, or "udp:<cidr>:port".
type packetCounter struct {
	chain string
	n     int
}

// newPacketCounter makes the counter's chain, jumped to from builtin when match (iptables
// arguments, "" for every packet) matches; it is removed when t ends.
func newPacketCounter(t *testing.T, builtin, match string, targets ...string) *packetCounter {
	t.Helper()
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	pc := &packetCounter{chain: "FLTEST-" + builtin[:4] + "-" + hex.EncodeToString(suffix)}
	jump := append(strings.Fields(match), "-j", pc.chain)
	mustIPTables(t, "-N", pc.chain)
	t.Cleanup(func() {
		_ = exec.Command("iptables", append([]string{"-w", "-t", "mangle", "-D", builtin}, jump...)...).Run()
		_ = exec.Command("iptables", "-w", "-t", "mangle", "-F", pc.chain).Run()
		_ = exec.Command("iptables", "-w", "-t", "mangle", "-X", pc.chain).Run()
	})
	for _, target := range targets {
		protocols := []string{"tcp", "udp"}
		host, port, _ := net.SplitHostPort(target)
		if p, rest, ok := strings.Cut(target, ":"); ok && p == "udp" {
			protocols = []string{"udp"}
			host, port, _ = strings.Cut(rest, ":")
		}
		// A rule per protocol, both commented with the target's index: counts adds them up.
		for _, proto := range protocols {
			mustIPTables(t, "-A", pc.chain, "-d", host, "-p", proto, "--dport", port, "-m", "comment", "--comment", strconv.Itoa(pc.n))
		}
		pc.n++
	}
	mustIPTables(t, append([]string{"-I", builtin, "1"}, jump...)...)
	return pc
}

// counts returns the packets counted for each target, in order.
func (pc *packetCounter) counts() []int {
	out, err := exec.Command("iptables", "-w", "-t", "mangle", "-L", pc.chain, "-n", "-v", "-x").Output()
	if err != nil {
		return nil
	}
	counts := make([]int, pc.n)
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		i := strings.Index(line, "/* ")
		if len(fields) == 0 || i < 0 {
			continue
		}
		packets, err1 := strconv.Atoi(fields[0])
		target, err2 := strconv.Atoi(strings.Fields(line[i+3:])[0])
		if err1 == nil && err2 == nil && target < pc.n {
			counts[target] += packets
		}
	}
	return counts
}

func mustIPTables(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("iptables", append([]string{"-w", "-t", "mangle"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatal(fmt.Errorf("iptables %s: %w: %s", strings.Join(args, " "), err, out))
	}
}
