package nodenet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
)

// DefaultPool is the range ChooseNetwork picks a cluster's node network from, and the only one
// in which a tenant may name one (InPool). The host gives a node network's range to the
// cluster's bridge: a range it reached before through another route, its default route
// included (a LAN beyond the gateway), would be taken from every program of the machine. An
// admin keeps DefaultPool for Flotilla: nothing the machine reaches lives in it.
var DefaultPool = netip.MustParsePrefix("10.200.0.0/16")

// InPool reports whether network lies inside DefaultPool.
func InPool(network netip.Prefix) bool {
	return network.IsValid() && network.Bits() >= DefaultPool.Bits() && DefaultPool.Contains(network.Addr())
}

// NetworkBits is the size of the node network ChooseNetwork picks: a /24, 253 nodes.
const NetworkBits = 24

// Cluster is the host side of one cluster's node network.
type Cluster struct {
	// ID names the bridge and the iptables chains: 8 lowercase hexadecimal digits (ClusterID).
	ID string
	// Network is the node network, an IPv4 range whose first address is the gateway.
	Network netip.Prefix
	// Forwards are the ports of loopback services (kube-apiserver, the image mirror) the nodes
	// reach at <gateway>:<port>.
	Forwards []uint16
}

// LoopbackPort returns the port of hostport, a server on this machine's loopback that nodes may
// reach through a forward of their gateway (Cluster.Forwards): 127.0.0.1:<port> or
// localhost:<port>, since the forward goes to 127.0.0.1.
func LoopbackPort(hostport string) (uint16, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err == nil && (host == "127.0.0.1" || host == "localhost") {
		if p, err := strconv.ParseUint(port, 10, 16); err == nil && p > 0 {
			return uint16(p), nil
		}
	}
	return 0, fmt.Errorf("%q is not a server on this machine's loopback: want 127.0.0.1:<port> or localhost:<port> (nodes reach it through their gateway, and nothing else)", hostport)
}

// ClusterID returns the ID of the cluster whose data is in dir: the first 8 hexadecimal digits
// of the SHA-256 of its absolute path, so that a cluster keeps its ID and two clusters of one
// host differ.
func ClusterID(dir string) string {
	return shortHash(dir)
}

// shortHash is the first 8 hexadecimal digits of the SHA-256 of the absolute form of path.
func shortHash(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:4])
}

var idPattern = regexp.MustCompile(`^[0-9a-f]{8}$`)

// Bridge is the name of the cluster's bridge: flb-<id>.
func (c Cluster) Bridge() string { return "flb-" + c.ID }

// Gateway is the bridge's address: the first address of Network.
func (c Cluster) Gateway() netip.Addr { return c.Network.Masked().Addr().Next() }

// chain names one of the cluster's iptables chains.
func (c Cluster) chain(suffix string) string { return "FLOTILLA-" + strings.ToUpper(c.ID) + suffix }

func (c Cluster) validate() error {
	if !idPattern.MatchString(c.ID) {
		return fmt.Errorf("node network ID %q: want 8 lowercase hexadecimal digits", c.ID)
	}
	return ValidateNetwork(c.Network)
}

// ValidateNetwork checks that network can be a node network: an IPv4 range of private addresses
// (RFC 1918) from /16 to /28, written with its first address.
func ValidateNetwork(network netip.Prefix) error {
	switch {
	case !network.IsValid() || !network.Addr().Is4():
		return errors.New("not an IPv4 range; write one such as 10.200.0.0/24")
	case network.Bits() < 16 || network.Bits() > 28:
		return fmt.Errorf("%s has a /%d prefix; use /16 to /28", network, network.Bits())
	case network.Masked() != network:
		return fmt.Errorf("%s is not the start of its range; write %s", network, network.Masked())
	case !network.Addr().IsPrivate():
		return fmt.Errorf("%s is not a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16): node networks stay on this machine", network)
	}
	return nil
}

// ErrNetworkInUse is wrapped by CheckFree's error when a range overlaps one the host uses.
var ErrNetworkInUse = errors.New("address range in use on this machine")

// CheckFree reports, wrapping ErrNetworkInUse, when network overlaps an address or route of this
// host, other than the bridge of the cluster whose ID is own (empty for a new cluster).
func CheckFree(network netip.Prefix, own string) error {
	used, err := hostRanges(own)
	if err != nil {
		return err
	}
	for _, u := range used {
		if u.prefix.Overlaps(network) {
			return fmt.Errorf("%w: %s overlaps %s (%s)", ErrNetworkInUse, network, u.prefix, u.what)
		}
	}
	return nil
}

// ChooseNetwork returns the first /24 of DefaultPool that overlaps no address or route of this
// host and none of taken (networks chosen for clusters that have no bridge yet).
func ChooseNetwork(taken ...netip.Prefix) (netip.Prefix, error) {
	used, err := hostRanges("")
	if err != nil {
		return netip.Prefix{}, err
	}
	next := DefaultPool.Addr()
	for DefaultPool.Contains(next) {
		candidate := netip.PrefixFrom(next, NetworkBits)
		free := true
		for _, u := range used {
			free = free && !u.prefix.Overlaps(candidate)
		}
		for _, t := range taken {
			free = free && !t.Overlaps(candidate)
		}
		if free {
			return candidate, nil
		}
		next = lastAddr(candidate).Next()
	}
	return netip.Prefix{}, fmt.Errorf("no free /%d left in %s for another node network: delete a cluster with real nodes, or name a free range", NetworkBits, DefaultPool)
}

// lastAddr is the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}) //nolint:gosec // one byte each
}

// usedRange is a range the host uses, and what uses it.
type usedRange struct {
	prefix netip.Prefix
	what   string
}

// hostRanges lists the IPv4 ranges of the host's interface addresses and routes (default
// routes aside), leaving out those of the bridge of cluster own.
func hostRanges(own string) ([]usedRange, error) {
	var out []usedRange
	ownBridge := Cluster{ID: own}.Bridge()
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("listing this machine's addresses: %w", err)
	}
	for _, a := range addrs {
		link, err := netlink.LinkByIndex(a.LinkIndex)
		if err == nil && own != "" && link.Attrs().Name == ownBridge {
			continue
		}
		if p, ok := prefixOf(a.IPNet); ok && !p.Addr().IsLoopback() {
			name := "an address"
			if err == nil {
				name = "the address of " + link.Attrs().Name
			}
			out = append(out, usedRange{prefix: p.Masked(), what: name})
		}
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		return nil, fmt.Errorf("listing this machine's routes: %w", err)
	}
	for _, r := range routes {
		p, ok := prefixOf(r.Dst)
		if !ok || p.Bits() == 0 {
			continue
		}
		link, err := netlink.LinkByIndex(r.LinkIndex)
		if err == nil && own != "" && link.Attrs().Name == ownBridge {
			continue
		}
		name := "a route"
		if err == nil {
			name = "a route via " + link.Attrs().Name
		}
		out = append(out, usedRange{prefix: p.Masked(), what: name})
	}
	return out, nil
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	if n == nil {
		return netip.Prefix{}, false
	}
	addr, ok := netip.AddrFromSlice(n.IP.To4())
	if !ok {
		return netip.Prefix{}, false
	}
	bits, _ := n.Mask.Size()
	return netip.PrefixFrom(addr, bits), true
}

// EnsureCluster makes the host side of c's node network exist: the bridge with the gateway
// address, route_localnet on it, the DNAT rules of c.Forwards and the isolation rules. It
// changes only what differs.
func EnsureCluster(ctx context.Context, c Cluster) error {
	if err := c.validate(); err != nil {
		return err
	}
	bridge, err := ensureBridge(c)
	if err != nil {
		return err
	}
	// Without route_localnet the kernel drops packets that DNAT sends to 127.0.0.1.
	if err := writeSysctl("net/ipv4/conf/"+bridge.Attrs().Name+"/route_localnet", "1"); err != nil {
		return err
	}
	return ensureRules(ctx, "", c.rules())
}

// ensureBridge creates the bridge when missing, gives it the gateway address and brings it up.
func ensureBridge(c Cluster) (netlink.Link, error) {
	link, err := netlink.LinkByName(c.Bridge())
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
		if err := netlink.LinkAdd(&netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: c.Bridge()}}); err != nil {
			return nil, fmt.Errorf("creating bridge %s: %w", c.Bridge(), err)
		}
		if link, err = netlink.LinkByName(c.Bridge()); err != nil {
			return nil, fmt.Errorf("finding bridge %s: %w", c.Bridge(), err)
		}
	case err != nil:
		return nil, fmt.Errorf("finding bridge %s: %w", c.Bridge(), err)
	}
	if err := replaceAddress(nil, link, netip.PrefixFrom(c.Gateway(), c.Network.Bits())); err != nil {
		return nil, err
	}
	if err := disableIPv6(c.Bridge()); err != nil {
		return nil, err
	}
	if err := netlink.LinkSetUp(link); err != nil {
		return nil, fmt.Errorf("bringing up %s: %w", c.Bridge(), err)
	}
	return link, nil
}

// replaceAddress makes want the only IPv4 address of link (h nil: the host's namespace).
func replaceAddress(h *netlink.Handle, link netlink.Link, want netip.Prefix) error {
	if h == nil {
		h = &netlink.Handle{}
	}
	addrs, err := h.AddrList(link, netlink.FAMILY_V4)
	if err != nil {
		return fmt.Errorf("listing the addresses of %s: %w", link.Attrs().Name, err)
	}
	found := false
	for _, a := range addrs {
		if p, ok := prefixOf(a.IPNet); ok && p == want {
			found = true
			continue
		}
		if err := h.AddrDel(link, &a); err != nil {
			return fmt.Errorf("removing %s from %s: %w", a.IPNet, link.Attrs().Name, err)
		}
	}
	if found {
		return nil
	}
	addr := &netlink.Addr{IPNet: &net.IPNet{IP: want.Addr().AsSlice(), Mask: net.CIDRMask(want.Bits(), 32)}}
	if err := h.AddrAdd(link, addr); err != nil {
		return fmt.Errorf("adding %s to %s: %w", want, link.Attrs().Name, err)
	}
	return nil
}

// rules are the host's iptables rules of c. What the host refuses from the bridge is rejected,
// so that a node sees at once that it cannot go there (the ICMP error goes back into the bridge);
// what comes from elsewhere towards the bridge is dropped, so that the host sends nothing off
// the machine on the nodes' behalf.
func (c Cluster) rules() []tableRules {
	nat := c.chain("")
	in, fwd := c.chain("-IN"), c.chain("-FWD")
	br := c.Bridge()
	var dnat []string
	for _, port := range c.Forwards {
		p := strconv.Itoa(int(port))
		dnat = append(dnat, "-A "+nat+" -d "+c.Gateway().String()+"/32 -p tcp -m tcp --dport "+p+" -j DNAT --to-destination 127.0.0.1:"+p)
	}
	return []tableRules{
		{
			table:  "nat",
			chains: map[string][]string{nat: dnat},
			jumps:  []jump{{chain: "PREROUTING", rule: "-i " + br + " -j " + nat}},
		},
		{
			table: "filter",
			chains: map[string][]string{
				in: {
					"-A " + in + " -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
					"-A " + in + " -m conntrack --ctstate DNAT -j ACCEPT",
					"-A " + in + " -j REJECT --reject-with icmp-port-unreachable",
				},
				fwd: {
					"-A " + fwd + " -i " + br + " -o " + br + " -j ACCEPT",
					"-A " + fwd + " -i " + br + " -j REJECT --reject-with icmp-net-prohibited",
					"-A " + fwd + " -j DROP",
				},
			},
			jumps: []jump{
				{chain: "INPUT", rule: "-i " + br + " -j " + in},
				{chain: "FORWARD", rule: "-i " + br + " -j " + fwd},
				{chain: "FORWARD", rule: "-o " + br + " -j " + fwd},
			},
		},
	}
}

// DeleteCluster removes the bridge and the iptables rules of the cluster whose ID is id. What
// is already gone is not an error.
func DeleteCluster(ctx context.Context, id string) error {
	c := Cluster{ID: id}
	if !idPattern.MatchString(id) {
		return fmt.Errorf("node network ID %q: want 8 lowercase hexadecimal digits", id)
	}
	var errs []error
	for _, t := range c.rules() {
		errs = append(errs, deleteRules(ctx, "", t))
	}
	link, err := netlink.LinkByName(c.Bridge())
	var notFound netlink.LinkNotFoundError
	switch {
	case errors.As(err, &notFound):
	case err != nil:
		errs = append(errs, fmt.Errorf("finding bridge %s: %w", c.Bridge(), err))
	default:
		if err := netlink.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("deleting bridge %s: %w", c.Bridge(), err))
		}
	}
	return errors.Join(errs...)
}
