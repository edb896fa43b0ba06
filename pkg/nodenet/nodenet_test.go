package nodenet

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/flotilla-dev/flotilla/pkg/process"
)

func TestValidateNetwork(t *testing.T) {
	tests := []struct {
		name    string
		network string
		wantErr string
	}{
		{name: "a private /24 is a node network", network: "10.200.3.0/24"},
		{name: "a /16 is one too", network: "172.20.0.0/16"},
		{name: "a public range is refused", network: "100.64.0.0/24", wantErr: "not a private range"},
		{name: "a range not written with its first address is refused", network: "10.200.3.7/24", wantErr: "write 10.200.3.0/24"},
		{name: "a range too small for nodes is refused", network: "10.200.3.0/30", wantErr: "use /16 to /28"},
		{name: "IPv6 is refused", network: "fd00::/64", wantErr: "not an IPv4 range"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := ValidateNetwork(netip.MustParsePrefix(tt.network))
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
		})
	}
}

func TestRestoreChangesOnlyWhatDiffers(t *testing.T) {
	g := NewWithT(t)
	c := Cluster{ID: "0a1b2c3d", Network: netip.MustParsePrefix("10.200.7.0/24"), Forwards: []uint16{6443}}
	nat := c.rules()[0]
	restore := nat.restore(nil)
	g.Expect(restore).To(Equal("*nat\n:FLOTILLA-0A1B2C3D - [0:0]\n" +
		"-A FLOTILLA-0A1B2C3D -d 10.200.7.1/32 -p tcp -m tcp --dport 6443 -j DNAT --to-destination 127.0.0.1:6443\n" +
		"-I PREROUTING 1 -i flb-0a1b2c3d -j FLOTILLA-0A1B2C3D\nCOMMIT\n"))

	current := []string{"-P PREROUTING ACCEPT", "-N FLOTILLA-0A1B2C3D",
		"-A PREROUTING -i flb-0a1b2c3d -j FLOTILLA-0A1B2C3D",
		"-A FLOTILLA-0A1B2C3D -d 10.200.7.1/32 -p tcp -m tcp --dport 6443 -j DNAT --to-destination 127.0.0.1:6443"}
	g.Expect(nat.restore(current)).To(BeEmpty(), "nothing to do when the rules are there")

	c.Forwards = append(c.Forwards, 5001)
	g.Expect(c.rules()[0].restore(current)).To(ContainSubstring("--dport 5001"), "a new forward replaces the chain")
	g.Expect(c.rules()[0].restore(current)).NotTo(ContainSubstring("-I PREROUTING"), "a jump that is there is not added twice")
}

// requireRoot skips tests that change the host's network: they need root and iptables.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("node networks are made by root: run the tests as root (real nodes need it)")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		t.Skip("iptables is not installed (make node-packages installs it)")
	}
}

// newNetNS makes a network namespace persisted at a file, removed when the test ends.
func newNetNS(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "net")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := process.InThread(func() error {
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

// listenIn listens on TCP addr in the namespace ns ("" the host's) and answers each connection
// with "hello".
func listenIn(t *testing.T, ns, addr string) string {
	t.Helper()
	var l net.Listener
	err := withNetNS(ns, func() (err error) {
		l, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("hello"))
			_ = c.Close()
		}
	}()
	return l.Addr().String()
}

// dialFrom connects from the namespace ns to addr and returns what it reads.
func dialFrom(ns, addr string) (string, error) {
	var got []byte
	err := withNetNS(ns, func() error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		_ = c.SetDeadline(time.Now().Add(time.Second))
		got, err = io.ReadAll(c)
		return err
	})
	return string(got), err
}

func TestNodesOfAClusterReachEachOtherAndTheForwardedPortsOnly(t *testing.T) {
	requireRoot(t)
	g := NewWithT(t)
	ctx := context.Background()

	// A loopback service the nodes may reach, and one of the host's they may not.
	forwarded := listenIn(t, "", "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(forwarded)
	p, _ := strconv.Atoi(port)
	hidden := listenIn(t, "", "0.0.0.0:0")
	_, hiddenPort, _ := net.SplitHostPort(hidden)

	network, err := ChooseNetwork()
	g.Expect(err).NotTo(HaveOccurred())
	c := Cluster{ID: ClusterID(t.TempDir()), Network: network, Forwards: []uint16{uint16(p)}}
	t.Cleanup(func() { _ = DeleteCluster(context.Background(), c.ID) })
	g.Expect(EnsureCluster(ctx, c)).To(Succeed())
	g.Expect(EnsureCluster(ctx, c)).To(Succeed(), "ensuring again changes nothing")
	g.Expect(CheckFree(network, "")).To(MatchError(ErrNetworkInUse), "the bridge's range is taken for other clusters")
	g.Expect(CheckFree(network, c.ID)).To(Succeed(), "but free for the cluster itself")

	nsA, nsB := newNetNS(t), newNetNS(t)
	a := Node{ID: NodeID(nsA), Cluster: c, Address: c.Gateway().Next(), LoopbackForwards: []uint16{uint16(p)}}
	b := Node{ID: NodeID(nsB), Cluster: c, Address: a.Address.Next()}
	g.Expect(EnsureNode(ctx, a, nsA)).To(Succeed())
	g.Expect(EnsureNode(ctx, b, nsB)).To(Succeed())
	g.Expect(EnsureNode(ctx, a, nsA)).To(Succeed(), "ensuring again changes nothing")

	inB := listenIn(t, nsB, b.Address.String()+":0")
	g.Expect(dialFrom(nsA, inB)).To(Equal("hello"), "node A reaches node B over the bridge")
	g.Expect(dialFrom(nsA, net.JoinHostPort(c.Gateway().String(), port))).To(Equal("hello"),
		"the gateway forwards to the loopback service")
	g.Expect(dialFrom(nsA, forwarded)).To(Equal("hello"), "node A reaches it at the host's address too: a loopback forward")
	_, err = dialFrom(nsB, forwarded)
	g.Expect(err).To(MatchError(syscall.ECONNREFUSED), "node B has no loopback forward: its own 127.0.0.1")
	// The loopback forward needs route_localnet on eth0, which would also let a neighbour reach
	// what node A keeps on its loopback (kubelet's ports, containerd's streaming server). Node B
	// tries, sending 127.0.0.1 to A's address, and gets nowhere.
	onALoopback := listenIn(t, nsA, "127.0.0.1:0")
	g.Expect(routeLoopbackVia(nsB, a.Address)).To(Succeed())
	_, err = dialFrom(nsB, onALoopback)
	var timeout net.Error
	g.Expect(errors.As(err, &timeout) && timeout.Timeout()).To(BeTrue(), "what arrives at eth0 for a loopback address is dropped: %v", err)
	g.Expect(dialFrom(nsA, onALoopback)).To(Equal("hello"), "node A's own programs still reach it")
	_, err = dialFrom(nsA, net.JoinHostPort(c.Gateway().String(), hiddenPort))
	g.Expect(err).To(MatchError(syscall.ECONNREFUSED), "the host's other services are refused to the node network at once")
	g.Expect(ipv6Addresses(t, "", c.Bridge(), a.HostVeth(), b.HostVeth())).To(BeEmpty(), "the host's side of the node network has no IPv6, which the rules would not cover")
	g.Expect(ipv6Addresses(t, nsA)).To(BeEmpty(), "neither has the node's namespace")
	_, err = dialFrom(nsA, "192.0.2.10:80")
	g.Expect(err).To(MatchError(syscall.EACCES), "a node's way off its network is prohibited")

	g.Expect(SetPodRoutes(nsA, []PodRoute{{PodCIDR: netip.MustParsePrefix("192.168.1.0/24"), Via: b.Address}})).To(Succeed())
	g.Expect(routesIn(t, nsA)).To(ContainElement("192.168.1.0/24 via " + b.Address.String()))
	g.Expect(SetPodRoutes(nsA, nil)).To(Succeed())
	g.Expect(routesIn(t, nsA)).NotTo(ContainElement(ContainSubstring("192.168.1.0/24")), "a route of a node that is gone goes")

	g.Expect(DeleteCluster(ctx, c.ID)).To(Succeed())
	_, err = netlink.LinkByName(c.Bridge())
	g.Expect(err).To(HaveOccurred(), "the bridge is gone")
	out, err := exec.Command("iptables-save").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).NotTo(ContainSubstring(strings.ToUpper(c.ID)), "no rule of the cluster is left")
	g.Expect(DeleteCluster(ctx, c.ID)).To(Succeed(), "deleting again is not an error")
}

// routeLoopbackVia makes the namespace ns send what it addresses to 127.0.0.1 to via over eth0,
// as an attacker on the node network would: route_localnet on eth0, a route in a table of its
// own, and a rule that looks it up before the local table.
func routeLoopbackVia(ns string, via netip.Addr) error {
	return withNetNS(ns, func() error {
		if err := writeSysctl("net/ipv4/conf/"+NodeInterface+"/route_localnet", "1"); err != nil {
			return err
		}
		eth0, err := netlink.LinkByName(NodeInterface)
		if err != nil {
			return err
		}
		const table = 100
		loopback := &net.IPNet{IP: net.IPv4(127, 0, 0, 1), Mask: net.CIDRMask(32, 32)}
		if err := netlink.RouteAdd(&netlink.Route{Dst: loopback, Gw: via.AsSlice(), LinkIndex: eth0.Attrs().Index, Table: table}); err != nil {
			return err
		}
		local := netlink.NewRule()
		local.Table, local.Priority = unix.RT_TABLE_LOCAL, 0
		if err := netlink.RuleDel(local); err != nil {
			return err
		}
		local.Priority = 200
		if err := netlink.RuleAdd(local); err != nil {
			return err
		}
		first := netlink.NewRule()
		first.Dst, first.Table, first.Priority = loopback, table, 100
		return netlink.RuleAdd(first)
	})
}

// ipv6Addresses lists the IPv6 addresses of the interfaces names (all of them when none is named)
// of the namespace ns ("" for the host's).
func ipv6Addresses(t *testing.T, ns string, names ...string) []string {
	t.Helper()
	var out []string
	err := withNetNS(ns, func() error {
		links, err := netlink.LinkList()
		if err != nil {
			return err
		}
		for _, link := range links {
			if len(names) > 0 && !slices.Contains(names, link.Attrs().Name) {
				continue
			}
			addrs, err := netlink.AddrList(link, netlink.FAMILY_V6)
			if err != nil {
				return err
			}
			for _, a := range addrs {
				out = append(out, link.Attrs().Name+" "+a.IPNet.String())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// routesIn lists the IPv4 routes of the namespace ns as "<dst> via <gateway>".
func routesIn(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	err := withNetNS(ns, func() error {
		routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
		for _, r := range routes {
			if r.Dst != nil && r.Gw != nil {
				out = append(out, r.Dst.String()+" via "+r.Gw.String())
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
