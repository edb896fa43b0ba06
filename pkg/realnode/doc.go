// Package realnode runs real Kubernetes nodes on this Linux host: kubelet, containerd (with its
// runc shim, running Debian's runc) and kube-proxy, built from source (`flotilla binaries build
// VERSION --nodes`), in namespaces and a cgroup of their own, so that several nodes of several
// clusters share the host and leave nothing behind when they go. The local provider's
// LocalMachine reconciler runs one per Machine of a worker node group with nodes: Real.
//
// # A node
//
// Ensure makes the node of a Config run and is idempotent, non-blocking and cheap when
// everything runs, like controlplane.Ensure. A node is:
//
//   - a network namespace (/run/netns/flotilla-<id>, so `ip netns` lists it; the init makes
//     it) wired by package nodenet to its cluster's node network: eth0 with the node's
//     address, a default route that prohibits every address off the node network and the Pod
//     ranges;
//     the gateway forwards kube-apiserver's port and the image mirror's to their loopback
//     listeners. Pods get a bridge cni0 and an address of the Node's Pod range (from
//     kube-controller-manager), from the CNI plugins bridge and host-local, without masquerade;
//   - an init (root.go): this program run again, in new user, network, mount, PID, UTS and IPC
//     namespaces (kept at /run/netns/flotilla-<id> and /run/flotilla/ns/<id>.<ns>) and in the
//     node's cgroup. The user namespace maps the node's ids to a range of the host's of its own
//     (ids.go): the node's root, and a privileged container's, is an unprivileged user of the
//     host, who owns what the node writes (layout.nodeOwned) and its cgroups; the node's
//     directory and the files the manager writes stay the host root's. The init makes the
//     node's root file system, a tmpfs that shows of the host only /usr and the node's programs
//     (read-only), the node's directory and runtime directory, the cgroup
//     hierarchies and a few devices, with a /proc of the node's PID namespace (the kernel
//     settings kubelet insists on, vm.overcommit_memory, kernel.panic ..., covered by files
//     holding the values it wants, so that it does not change the host's), a /sys of its
//     network namespace and an /etc of its own; it pivots into it and stays, as the PID
//     namespace's init, reaping the node's orphans. What the node mounts (Pod volumes, container
//     root file systems, the Pods' network namespaces) stays in its mount namespace and goes
//     with it; a Pod's hostPath of / is the node's root, hostPID its PID namespace. An init
//     that is gone took the node's processes with it: Ensure starts the node again;
//   - a cgroup: the node's processes start in the cgroup v2 group <v2>/flotilla/<id>/system,
//     and everything they start (shims, containers) follows; kubelet's cgroupRoot is
//     /flotilla/<id>/pods, in the cgroup v1 hierarchies on a hybrid host (kubelet runs with
//     failCgroupV1: false there; Kubernetes 1.36 refuses cgroup v1 otherwise) or in the v2
//     one on a unified host;
//   - processes, in all of the node's namespaces (entered through nsenter: a thread of this
//     program cannot enter a user namespace), started and adopted through package
//     process (pid files, logs under the node's directory): containerd, kubelet, and
//     kube-proxy once kubelet has its client certificate. The restart policy is package
//     process's (StableAfter and the back-off constants); a process that fails
//     CrashLoopFailures times in a row is reported as crash looping (ProcessStatus.CrashLooping) with the end of its log.
//
// # Joining
//
// kubelet joins with a bootstrap token (Config.BootstrapToken, whose Secret the caller creates
// with BootstrapTokenSecret), makes a key and a certificate signing request, which
// kube-controller-manager approves and signs (ClusterObjects holds the RBAC that allows it, as
// kubeadm's), and writes its kubeconfig. It bootstraps before it starts its informers
// (rotateCertificates: false), so that it registers and becomes Ready at once; its certificate
// lasts as long as kube-controller-manager's signing duration (a year). kube-proxy uses
// kubelet's credentials, allowed by the binding of system:node-proxier to system:nodes.
//
// # Images
//
// containerd resolves docker.io, registry.k8s.io and ghcr.io through the image mirror only
// (certs.d/<registry>/hosts.toml: the mirror is the server, there is no fallback), under the
// layout of package ociimage. Its sandbox image is ociimage.Pause, and CoreDNS's is
// ociimage.CoreDNS, both pinned by the digests `flotilla image build` recorded (Config.Images,
// PinnedImages): whoever pushes another image under their tags to the mirror is not pulled. OOM score adjustments are
// clamped to containerd's own (restrict_oom_score_adj): a host that withholds CAP_SYS_RESOURCE
// (as this one does) cannot lower them.
//
// # Settings, and why
//
// kubelet: its API on port 10250 of the node's address (reached by kube-apiserver with a client
// certificate, controlplane.KubeletClientUser, and authorized by webhook), healthz on the
// namespace's loopback, no read-only port, anonymous requests refused; cgroupfs driver;
// resolvConf an empty file (Pods with dnsPolicy Default resolve nothing off the cluster);
// evictions only on a nearly full disk (the host's disk is shared); node status every 5 s;
// seccompDefault, so that a container that names no seccomp profile gets the runtime's default;
// the KubeletInUserNamespace feature gate (it runs as root of the node's user namespace).
// kube-proxy: iptables mode, servers on loopback, conntrack's host-wide settings left alone.
//
// # Deleting
//
// Delete stops kubelet, kills every process of the node through its cgroup (its init and
// containers included), releases the namespaces (the kernel then removes their mounts,
// interfaces and the Pods' network namespaces) and removes the cgroups, the runtime directory
// and the node's directory. When the last node of the host goes, what the nodes made on the
// host besides (the private mount of /run/flotilla/ns, /run/netns if they created it) goes too.
package realnode
