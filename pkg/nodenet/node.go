package nodenet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// NodeInterface is the name of a node's interface in its network namespace.
const NodeInterface = "eth0"

// podRouteProtocol marks the routes SetPodRoutes makes, so that it finds and replaces them and
// leaves others alone (the value is unassigned in /etc/iproute2/rt_protos).
const podRouteProtocol netlink.RouteProtocol = 0x46

// Node is the network of one real node.
type Node struct {
	// ID names the host end of the veth pair, flv-<id>: 8 lowercase hexadecimal digits.
	ID string
	// Cluster is its cluster's node network.
	Cluster Cluster
	// Address is the node's address in Cluster.Network.
	Address netip.Addr
	// LoopbackForwards are ports of Cluster.Forwards that the node's own programs also reach at
	// 127.0.0.1:<port> in its namespace, as programs on the host do (the image mirror's, so that
	// containerd pulls from the address, and with the TLS name, the manager uses).
	LoopbackForwards []uint16
}

// NodeID returns the ID of the node whose data is in dir, as ClusterID does for clusters.
func NodeID(dir string) string { return shortHash(dir) }

// HostVeth is the name of the host end of the node's veth pair.
func (n Node) HostVeth() string { return "flv-" + n.ID }

func (n Node) validate() error {
	if !idPattern.MatchString(n.ID) {
		return fmt.Errorf("node network ID %q: want 8 lowercase hexadecimal digits", n.ID)
	}
	if err := n.Cluster.validate(); err != nil {
		return err
	}
	if !n.Cluster.Network.Contains(n.Address) || n.Address == n.Cluster.Gateway() || n.Address == n.Cluster.Network.Masked().Addr() || n.Address == lastAddr(n.Cluster.Network) {
		return fmt.Errorf("node address %s is not a host address of %s other than the gateway %s", n.Address, n.Cluster.Network, n.Cluster.Gateway())
	}
	return nil
}

// EnsureNode wires the network namespace at nsPath as node n (see the package documentation):
// the veth pair to the cluster's bridge, eth0 with n.Address, loopback, IPv4 forwarding, no IPv6,
// the prohibit default route, the masquerade of Pod traffic to the gateway and the loopback
// forwards. The cluster's bridge must exist (EnsureCluster).
func EnsureNode(ctx context.Context, n Node, nsPath string) error {
	if err := n.validate(); err != nil {
		return err
	}
	ns, inside, closeNS, err := openNetNS(nsPath)
	if err != nil {
		return err
	}
	defer closeNS()

	bridge, err := netlink.LinkByName(n.Cluster.Bridge())
	if err != nil {
		return fmt.Errorf("finding bridge %s of the node network: %w", n.Cluster.Bridge(), err)
	}
	eth0, err := ensureVeth(n, ns, inside)
	if err != nil {
		return err
	}
	host, err := netlink.LinkByName(n.HostVeth())
	if err != nil {
		return fmt.Errorf("finding %s: %w", n.HostVeth(), err)
	}
	if host.Attrs().MasterIndex != bridge.Attrs().Index {
		if err := netlink.LinkSetMaster(host, bridge); err != nil {
			return fmt.Errorf("attaching %s to %s: %w", n.HostVeth(), n.Cluster.Bridge(), err)
		}
	}
	if err := disableIPv6(n.HostVeth()); err != nil {
		return err
	}
	if err := netlink.LinkSetUp(host); err != nil {
		return fmt.Errorf("bringing up %s: %w", n.HostVeth(), err)
	}
	if err := replaceAddress(inside, eth0, netip.PrefixFrom(n.Address, n.Cluster.Network.Bits())); err != nil {
		return err
	}
	err = withNetNS(nsPath, func() error {
		for _, iface := range []string{"all", "default"} {
			if err := disableIPv6(iface); err != nil {
				return err
			}
		}
		if err := writeSysctl("net/ipv4/ip_forward", "1"); err != nil {
			return err
		}
		// Without route_localnet the kernel drops what leaves eth0 from 127.0.0.1 before the
		// masquerade gives it the node's address (LoopbackForwards).
		return writeSysctl("net/ipv4/conf/"+NodeInterface+"/route_localnet", "1")
	})
	if err != nil {
		return err
	}
	if err := ensureNoWayOut(inside, nsPath); err != nil {
		return err
	}
	lo, err := inside.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("finding lo in %s: %w", nsPath, err)
	}
	for _, link := range []netlink.Link{lo, eth0} {
		if err := inside.LinkSetUp(link); err != nil {
			return fmt.Errorf("bringing up %s in %s: %w", link.Attrs().Name, nsPath, err)
		}
	}
	return ensureRules(ctx, nsPath, n.rules())
}

// ensureVeth creates the veth pair when its host end is missing, and returns the node's end,
// eth0 in the namespace. A host end whose peer is not eth0 in ns (the namespace was made again)
// is deleted and the pair made again.
func ensureVeth(n Node, ns netns.NsHandle, inside *netlink.Handle) (netlink.Link, error) {
	eth0, err := inside.LinkByName(NodeInterface)
	_, hostErr := netlink.LinkByName(n.HostVeth())
	if err == nil && hostErr == nil {
		return eth0, nil
	}
	var notFound netlink.LinkNotFoundError
	if hostErr == nil {
		// The host end lost its peer: start over.
		if link, err := netlink.LinkByName(n.HostVeth()); err == nil {
			if err := netlink.LinkDel(link); err != nil {
				return nil, fmt.Errorf("deleting %s: %w", n.HostVeth(), err)
			}
		}
	} else if !errors.As(hostErr, &notFound) {
		return nil, fmt.Errorf("finding %s: %w", n.HostVeth(), hostErr)
	}
	if err == nil {
		if err := inside.LinkDel(eth0); err != nil {
			return nil, fmt.Errorf("deleting a stale %s: %w", NodeInterface, err)
		}
	}
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: n.HostVeth()},
		PeerName:      NodeInterface,
		PeerNamespace: netlink.NsFd(int(ns)),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return nil, fmt.Errorf("creating the veth pair %s/%s: %w", n.HostVeth(), NodeInterface, err)
	}
	eth0, err = inside.LinkByName(NodeInterface)
	if err != nil {
		return nil, fmt.Errorf("finding %s in the node's namespace: %w", NodeInterface, err)
	}
	return eth0, nil
}

// noWayOut is the default route of a node's namespace: a "prohibit" route, so that what is
// addressed off the node network (and off the Pod ranges SetPodRoutes routes) is refused at once:
// a program of the namespace gets EACCES, and a Pod the node forwards for gets an ICMP
// "administratively prohibited", which ends its TCP connection or UDP exchange at once with "no
// route to host" (the kernel rate-limits these errors to about one a second after a burst; a
// packet whose error is held back is dropped all the same). Without it, a Pod would get "network
// unreachable", which the kernel does not report to UDP sockets: it would wait for a timeout.
var noWayOut = netlink.Route{
	Dst:  &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)},
	Type: unix.RTN_PROHIBIT,
}

// ensureNoWayOut makes noWayOut the default route of the namespace inside (at nsPath), in place
// of any other.
func ensureNoWayOut(inside *netlink.Handle, nsPath string) error {
	route := noWayOut
	if err := inside.RouteReplace(&route); err != nil {
		return fmt.Errorf("setting the default route of %s: %w", nsPath, err)
	}
	return nil
}

// rules are the node's iptables rules, in its namespace: what goes to the gateway leaves with
// the node's address (Pods' traffic, and that of LoopbackForwards), and 127.0.0.1:<port> of
// LoopbackForwards goes to <gateway>:<port>, which the host forwards to its own loopback. Since
// route_localnet lets eth0 carry loopback addresses, what arrives at eth0 for one of them, but
// is neither a reply nor from one, is dropped: no other node or Pod reaches the services the
// node keeps on its loopback (kubelet's, containerd's streaming server).
func (n Node) rules() []tableRules {
	const postrouting, output, input = "FLOTILLA-POSTROUTING", "FLOTILLA-OUTPUT", "FLOTILLA-INPUT"
	gateway := n.Cluster.Gateway().String()
	var dnat []string
	for _, port := range n.LoopbackForwards {
		p := strconv.Itoa(int(port))
		dnat = append(dnat, "-A "+output+" -d 127.0.0.1/32 -p tcp -m tcp --dport "+p+" -j DNAT --to-destination "+gateway+":"+p)
	}
	return []tableRules{
		{
			table: "nat",
			chains: map[string][]string{
				postrouting: {"-A " + postrouting + " -d " + gateway + "/32 -o " + NodeInterface + " -j MASQUERADE"},
				output:      dnat,
			},
			jumps: []jump{{chain: "POSTROUTING", rule: "-j " + postrouting}, {chain: "OUTPUT", rule: "-j " + output}},
		},
		{
			table: "filter",
			chains: map[string][]string{input: {
				"-A " + input + " ! -s 127.0.0.0/8 -d 127.0.0.0/8 -i " + NodeInterface + " -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP",
			}},
			jumps: []jump{{chain: "INPUT", rule: "-j " + input}},
		},
	}
}

// PodRoute sends a Pod range to the node that holds it.
type PodRoute struct {
	// PodCIDR is the node's Pod range.
	PodCIDR netip.Prefix
	// Via is the node's address.
	Via netip.Addr
}

// SetPodRoutes makes the routes of the namespace at nsPath to other nodes' Pod ranges be routes:
// missing ones are added, changed ones replaced, and those of nodes that are gone removed.
func SetPodRoutes(nsPath string, routes []PodRoute) error {
	_, inside, closeNS, err := openNetNS(nsPath)
	if err != nil {
		return err
	}
	defer closeNS()
	eth0, err := inside.LinkByName(NodeInterface)
	if err != nil {
		return fmt.Errorf("finding %s in %s: %w", NodeInterface, nsPath, err)
	}
	existing, err := inside.RouteListFiltered(netlink.FAMILY_V4, &netlink.Route{Protocol: podRouteProtocol}, netlink.RT_FILTER_PROTOCOL)
	if err != nil {
		return fmt.Errorf("listing routes in %s: %w", nsPath, err)
	}
	want := map[netip.Prefix]netip.Addr{}
	for _, r := range routes {
		want[r.PodCIDR.Masked()] = r.Via
	}
	for _, r := range existing {
		dst, _ := prefixOf(r.Dst)
		gw, _ := netip.AddrFromSlice(r.Gw.To4())
		if via, ok := want[dst]; ok && via == gw {
			delete(want, dst)
			continue
		}
		if err := inside.RouteDel(&r); err != nil {
			return fmt.Errorf("removing the route to %s in %s: %w", dst, nsPath, err)
		}
	}
	for dst, via := range want {
		route := &netlink.Route{
			LinkIndex: eth0.Attrs().Index,
			Dst:       &net.IPNet{IP: dst.Addr().AsSlice(), Mask: net.CIDRMask(dst.Bits(), 32)},
			Gw:        via.AsSlice(),
			Protocol:  podRouteProtocol,
		}
		if err := inside.RouteReplace(route); err != nil {
			return fmt.Errorf("routing %s via %s in %s: %w", dst, via, nsPath, err)
		}
	}
	return nil
}

// openNetNS opens the network namespace at nsPath and a netlink handle in it; closeNS closes both.
func openNetNS(nsPath string) (ns netns.NsHandle, inside *netlink.Handle, closeNS func(), err error) {
	ns, err = netns.GetFromPath(nsPath)
	if err != nil {
		return ns, nil, nil, fmt.Errorf("opening network namespace %s: %w", nsPath, err)
	}
	inside, err = netlink.NewHandleAt(ns)
	if err != nil {
		_ = ns.Close()
		return ns, nil, nil, fmt.Errorf("opening netlink in %s: %w", nsPath, err)
	}
	return ns, inside, func() { inside.Close(); _ = ns.Close() }, nil
}
