package realnode

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// Config describes one real node.
type Config struct {
	// Name is the Node's name, a DNS label (the Machine's name).
	Name string
	// Dir is the node's directory, <cluster dir>/nodes/<Name> (NodesDir): the cluster's
	// directory is the one its node network's ID derives from (nodenet.ClusterID).
	Dir string
	// Binaries is the set of the node's Kubernetes version, with its node programs
	// (binaries.NodeNames: `flotilla binaries build VERSION --nodes`).
	Binaries binaries.Set
	// Network is the cluster's node network; its first address, the gateway, forwards
	// kube-apiserver's port and the image mirror's.
	Network netip.Prefix
	// APIServerPort is kube-apiserver's port, reached at the gateway.
	APIServerPort int32
	// Mirror is the image mirror: the registry the node pulls every image from (MirroredRegistries),
	// with its connection (TLS or plain HTTP, CA, credentials). Its host is 127.0.0.1 or
	// localhost (nodenet.LoopbackPort): the node's programs reach it at that address, which the
	// node network forwards to the host's loopback. MirrorOf says which registry it is.
	Mirror registryconn.Mirror
	// Images are the sandbox's and the cluster DNS's images, pinned by digest (PinnedImages).
	Images NodeImages
	// CACert is the cluster CA's certificate (PEM): kubelet and kube-proxy trust it for
	// kube-apiserver, and kubelet authenticates the clients of its API with it.
	CACert []byte
	// BootstrapToken ("<id>.<secret>") authenticates kubelet until the cluster has signed its
	// client certificate. It is needed until then only (NeedsBootstrap).
	BootstrapToken string
	// ProviderID is the Node's spec.providerID.
	ProviderID string
	// Labels are set by kubelet on its Node when it registers. Labels a kubelet may not set
	// (in the kubernetes.io and k8s.io domains, roles among them) are set by the caller.
	Labels map[string]string
	// PodCIDR is the cluster's Pod range (kube-proxy's clusterCIDR).
	PodCIDR string
	// ClusterDNS is the address of the cluster's DNS Service.
	ClusterDNS string
}

// ClusterDomain is the DNS domain of every cluster's Services.
const ClusterDomain = "cluster.local"

var namePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// NodesDir is the directory of a cluster's real nodes: <cluster dir>/nodes.
func NodesDir(clusterDir string) string { return filepath.Join(clusterDir, "nodes") }

// clusterDir is the directory of the node's cluster.
func (cfg Config) clusterDir() string { return filepath.Dir(filepath.Dir(cfg.Dir)) }

// validate checks cfg and that the programs it runs are there.
func (cfg Config) validate() error {
	if !namePattern.MatchString(cfg.Name) || len(cfg.Name) > 63 {
		return fmt.Errorf("node name %q: must be a DNS label", cfg.Name)
	}
	if !filepath.IsAbs(cfg.Dir) || filepath.Base(filepath.Dir(cfg.Dir)) != "nodes" {
		return fmt.Errorf("node directory %q: want the absolute <cluster dir>/nodes/<name>", cfg.Dir)
	}
	if err := nodenet.ValidateNetwork(cfg.Network); err != nil {
		return fmt.Errorf("node network: %w", err)
	}
	if cfg.APIServerPort <= 0 {
		return errors.New("node config: kube-apiserver's port is required")
	}
	if _, err := cfg.mirrorPort(); err != nil {
		return err
	}
	if err := cfg.Images.validate(); err != nil {
		return err
	}
	if _, err := netip.ParsePrefix(cfg.PodCIDR); err != nil {
		return fmt.Errorf("pod range %q: %w", cfg.PodCIDR, err)
	}
	if net.ParseIP(cfg.ClusterDNS) == nil {
		return fmt.Errorf("cluster DNS address %q is not an IP address", cfg.ClusterDNS)
	}
	if len(cfg.CACert) == 0 {
		return errors.New("node config: the cluster CA certificate is required")
	}
	if cfg.Binaries.Dir == "" {
		return errors.New("node config: no binaries given: use binaries.Find")
	}
	if err := cfg.Binaries.Check(binaries.NodeNames...); err != nil {
		return fmt.Errorf("%w --nodes", err)
	}
	return Prerequisites()
}

// HostProgram is a program a real node runs from the host, and the Debian package with it.
type HostProgram struct {
	Name    string
	Package string
}

// HostPrograms are the programs real nodes need from the host: runc runs the containers,
// iptables (with iptables-restore) holds the node network's rules and kube-proxy's Services,
// nsenter starts the node's programs in its user namespace.
var HostPrograms = []HostProgram{{"runc", "runc"}, {"iptables", "iptables"}, {"iptables-restore", "iptables"}, {"nsenter", "util-linux"}}

// ErrPrerequisite is wrapped by Prerequisites' error.
var ErrPrerequisite = errors.New("a program real nodes need is not installed")

// Prerequisites reports the first of HostPrograms that is not installed, with the Debian package
// to install, wrapping ErrPrerequisite; and that this program runs as root, which namespaces,
// cgroups and the node network need.
func Prerequisites() error {
	for _, p := range HostPrograms {
		if _, err := exec.LookPath(p.Name); err != nil {
			return fmt.Errorf("%w: %s is not installed: install Debian's %s package (apt-get install %s, or make node-packages)",
				ErrPrerequisite, p.Name, p.Package, p.Package)
		}
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: real nodes make namespaces, cgroups and networks, which needs root: run the manager as root", ErrPrerequisite)
	}
	return nil
}
