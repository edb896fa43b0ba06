// Package nodenet wires the networks of real nodes (package realnode) on one Linux host, so that
// several nodes of several clusters share it and no traffic leaves it.
//
// # The cluster side
//
// A Cluster is the host side of one cluster's node network, a private IPv4 range such as
// 10.200.3.0/24 (ChooseNetwork picks a free /24 of DefaultPool when the user names none):
//
//   - a bridge flb-<id> holding the range's first address, the gateway, to which every node of
//     the cluster is attached: nodes reach each other over it, at layer 2, so the host routes no
//     node or Pod address;
//   - loopback services the nodes need, reached at the gateway: Cluster.Forwards lists ports
//     (kube-apiserver's, the image mirror's) that an iptables DNAT rule turns from
//     <gateway>:<port> into 127.0.0.1:<port>, with route_localnet set on the bridge alone. The
//     servers themselves keep listening on loopback;
//   - isolation, in iptables chains of its own (FLOTILLA-<ID>-IN and -FWD, jumped to from INPUT
//     and FORWARD for the bridge): from the bridge the host accepts only the forwarded ports and
//     replies to connections it opened (kube-apiserver dialling a kubelet), and rejects the rest
//     at once ("port unreachable": connection refused); it forwards nothing between the bridge
//     and any other interface, even when the host forwards packets otherwise or a node's routes
//     were changed: what comes from the bridge is rejected ("network prohibited"), what comes
//     towards it dropped, so that the host sends nothing off the machine on the nodes' behalf;
//   - no IPv6: the bridge (and each node's veth, and the node's namespace) has IPv6 disabled, so
//     no link-local address lets a node reach the host's services around the IPv4 rules.
//
// EnsureCluster creates what is missing and is cheap when everything is there; DeleteCluster
// removes the bridge and the rules. Names derive from the Cluster's ID (ClusterID hashes the
// cluster's directory), so a restarted manager finds what an earlier one created.
//
// # The control plane side
//
// An Egress keeps a local control plane's kube-apiserver (root, in the host's network namespace)
// on this machine: it starts in the cgroup v2 group flotilla/controlplane-<id>, whose sockets'
// packets the host's OUTPUT chains (IPv4 and IPv6) send to FLOTILLA-<ID>-OUT, which lets through
// the loopback interface and the cluster's bridge and rejects the rest ("network prohibited").
// EnsureEgress and DeleteEgress make and remove the group and the rules.
//
// # The node side
//
// A Node lives in a network namespace (created by package realnode) that EnsureNode wires: a veth
// pair whose host end flv-<id> is attached to the cluster's bridge and whose other end is eth0
// in the namespace, with the node's address in the cluster's range; loopback up; IPv4
// forwarding on (Pods on the node's CNI bridge are routed through eth0); IPv6 off; and a
// "prohibit" default route: the namespace reaches its cluster's range and the Pod ranges, and
// anything else is refused at once, EACCES to its own programs and an ICMP "administratively
// prohibited" to its Pods (a hard error, which ends a UDP exchange too; the "network
// unreachable" of a missing route would not). EnsureNode puts that route back when something
// replaced it. Traffic from Pods to the gateway
// (kube-apiserver through the kubernetes Service, the image mirror) is masqueraded to the node's
// address, so replies come back to a node the host knows; Pod-to-Pod traffic between nodes is
// never masqueraded and goes over the bridge along the routes SetPodRoutes keeps: each other
// node's Pod range via that node's address. Node.LoopbackForwards lists forwarded ports that
// the node's own programs reach at 127.0.0.1:<port> as well, as programs on the host do: a DNAT
// rule of the namespace's OUTPUT turns it into <gateway>:<port> (with route_localnet on eth0 and
// the masquerade), so that containerd reaches the image mirror at the address, and with the TLS
// server name, the manager uses.
//
// Deleting a node's network namespace deletes eth0 and with it the host end of the pair.
//
// # Commands
//
// Links, addresses and routes are set with netlink; sysctls are written under /proc/sys; the
// iptables rules are made by the iptables program (Debian's iptables package), which the nodes'
// kube-proxy needs anyway. Missing programs are reported by Prerequisites with the Debian package
// that provides them.
package nodenet
