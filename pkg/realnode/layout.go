package realnode

import (
	"path/filepath"

	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// RuntimeRoot holds what real nodes keep while the host runs: their sockets and runtime state
// (short paths: a Unix socket's path has at most 107 bytes), the files their mount namespaces
// are kept by, and locks.
const RuntimeRoot = "/run/flotilla"

// layout names the files of a node. Its directory (Config.Dir) holds what lasts:
//
//	state.json                 the node's address and its range of ids, chosen once
//	run/, logs/                pid files, records and logs of its processes (package process),
//	                           and its init's (init.json, init.log)
//	pki/ca.crt                 the cluster CA
//	containerd/config.toml     containerd's configuration; containerd/root its images
//	certs.d/<registry>/        hosts.toml: the image mirror of docker.io, registry.k8s.io, ghcr.io
//	cni/                       the CNI configuration template, the written configuration and the
//	                           addresses host-local gave out
//	kubelet/                   config.yaml, bootstrap.kubeconfig, kubeconfig, pki/ and its root
//	                           directory (volumes of the Pods)
//	pod-logs/                  the Pods' logs
//	kube-proxy/config.yaml     kube-proxy's configuration
//	sysctl/                    the kernel settings kubelet reads in the node's mount namespace
//	resolv.conf                the node's resolver configuration: no name servers
//
// The directory and the files the manager writes are the host root's; what the node writes
// (nodeOwned) is its root's. The runtime directory, RuntimeRoot/<id>, holds containerd's state
// and sockets, the shims' sockets and runc's state, and rootfs/, where the init mounts the node's
// root file system; in the node's mount namespace its kubelet/ shows kubelet/root of the node's
// directory (kubelet makes sockets in its root directory, whose paths must be short). The
// network namespace is /run/netns/flotilla-<id> (`ip netns` lists it), the others
// RuntimeRoot/ns/<id>.<ns>, the cgroup <cgroup v2>/flotilla/<id>.
type layout struct {
	dir string
	id  string
}

func newLayout(dir string) layout { return layout{dir: dir, id: nodenet.NodeID(dir)} }

func (l layout) path(elem ...string) string {
	return filepath.Join(append([]string{l.dir}, elem...)...)
}

func (l layout) state() string      { return l.path("state.json") }
func (l layout) lock() string       { return l.path(".lock") }
func (l layout) caCert() string     { return l.path("pki", "ca.crt") }
func (l layout) resolvConf() string { return l.path("resolv.conf") }
func (l layout) tmp() string        { return l.path("tmp") }

func (l layout) containerdConfig() string { return l.path("containerd", "config.toml") }
func (l layout) containerdRoot() string   { return l.path("containerd", "root") }
func (l layout) certsDir() string         { return l.path("certs.d") }
func (l layout) mirrorCA() string         { return l.path("certs.d", "mirror-ca.crt") }

func (l layout) cniConfDir() string  { return l.path("cni", "net.d") }
func (l layout) cniTemplate() string { return l.path("cni", "template.json") }
func (l layout) cniIPAMDir() string  { return l.path("cni", "ipam") }

func (l layout) kubeletDir() string          { return l.path("kubelet") }
func (l layout) kubeletConfig() string       { return l.path("kubelet", "config.yaml") }
func (l layout) bootstrapKubeconfig() string { return l.path("kubelet", "bootstrap.kubeconfig") }
func (l layout) kubeletKubeconfig() string   { return l.path("kubelet", "kubeconfig") }
func (l layout) kubeletCertDir() string      { return l.path("kubelet", "pki") }
func (l layout) kubeletClientCert() string {
	return l.path("kubelet", "pki", "kubelet-client-current.pem")
}
func (l layout) kubeletRoot() string          { return l.path("kubelet", "root") }
func (l layout) kubeletVolumePlugins() string { return l.path("kubelet", "volume-plugins") }
func (l layout) podLogs() string              { return l.path("pod-logs") }
func (l layout) kubeProxyConfig() string      { return l.path("kube-proxy", "config.yaml") }
func (l layout) sysctlDir() string            { return l.path("sysctl") }

func (l layout) runtimeDir() string       { return filepath.Join(RuntimeRoot, l.id) }
func (l layout) containerdState() string  { return filepath.Join(l.runtimeDir(), "containerd") }
func (l layout) containerdSocket() string { return filepath.Join(l.runtimeDir(), "containerd.sock") }
func (l layout) shimSockets() string      { return filepath.Join(l.runtimeDir(), "s") }
func (l layout) runcRoot() string         { return filepath.Join(l.runtimeDir(), "runc") }
func (l layout) initRecord() string       { return l.path("run", "init.json") }

// rootfs is where the node's init mounts the node's root file system before it makes it its root;
// on the host it is an empty directory.
func (l layout) rootfs() string { return filepath.Join(l.runtimeDir(), "rootfs") }

// nodeOwned are the directories the node's programs write in, which its root owns: kubelet's
// (its kubeconfig, certificates and root directory), containerd's images and plugins, the CNI
// configuration containerd writes and the addresses host-local gives out, the Pods' logs, the
// temporary files, and the runtime directory. The manager writes nothing in them but what it
// replaces whole (kubelet's configuration and bootstrap kubeconfig, by rename).
func (l layout) nodeOwned() []string {
	return []string{l.kubeletDir(), l.kubeletCertDir(), l.kubeletRoot(), l.kubeletVolumePlugins(), l.containerdRoot(),
		l.path("containerd", "opt"), l.cniConfDir(), l.cniIPAMDir(), l.podLogs(), l.tmp(), l.runtimeDir()}
}

// kubeletRootMount is where the node's mount namespace shows kubeletRoot, and what kubelet is
// told its root directory is: kubelet makes Unix sockets there, whose paths must stay short.
func (l layout) kubeletRootMount() string { return filepath.Join(l.runtimeDir(), "kubelet") }

// netNSName is the node's network namespace as `ip netns` names it.
func (l layout) netNSName() string { return "flotilla-" + l.id }
func (l layout) netNS() string     { return filepath.Join("/run/netns", l.netNSName()) }
func (l layout) mountNS() string   { return l.namespace("mnt") }

// namespace is the file that keeps the node's namespace ns (named as in /proc/<pid>/ns): its
// network namespace's is netNS, the others' are in mountNSDir.
func (l layout) namespace(ns string) string {
	if ns == "net" {
		return l.netNS()
	}
	return filepath.Join(mountNSDir, l.id+"."+ns)
}

// cgroup is the node's cgroup, relative to a hierarchy's root; kubelet's cgroupRoot is its
// "pods" child, the node's processes are in its "system" child.
func (l layout) cgroup() string { return "/flotilla/" + l.id }

func (l layout) keeper() process.Keeper {
	return process.Keeper{RunDir: l.path("run"), LogDir: l.path("logs")}
}

// mountNSDir holds the files that keep the nodes' namespaces but their network namespaces; it is
// a mount point of its own with private propagation, so that a mount namespace's file mounted
// there does not propagate into the namespace it keeps.
var mountNSDir = filepath.Join(RuntimeRoot, "ns")
