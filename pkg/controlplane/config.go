package controlplane

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/pki"
)

// HomeEnv names the environment variable that overrides HomeDir.
const HomeEnv = "FLOTILLA_HOME"

const (
	// DefaultHost is the address kube-apiserver listens on when Config.Host is empty.
	DefaultHost = "127.0.0.1"
	// DefaultServiceClusterIPRange is the service range when Config.ServiceClusterIPRange is empty.
	DefaultServiceClusterIPRange = "10.96.0.0/12"
	// KwokNodeAnnotationValue is the value of the kwok.x-k8s.io/node annotation
	// (infrav1.KwokNodeAnnotation) on the Nodes kwok manages.
	KwokNodeAnnotationValue = "fake"
	// KwokPodCIDR is the range kwok gives the Pods it plays their addresses from.
	KwokPodCIDR = "10.244.0.0/16"
)

// Config describes the control plane of one cluster.
type Config struct {
	// Name is the cluster name: the kubeconfig cluster name and the etcd member name.
	Name string
	// Dir is the control plane's directory, $FLOTILLA_HOME/clusters/<Name>; empty means
	// ClusterDir(HomeDir(), Name).
	Dir string
	// Binaries is the set of programs to run (binaries.Find).
	Binaries binaries.Set
	// Host is the IP address kube-apiserver listens on and advertises; default 127.0.0.1.
	Host string
	// APIServerPort is kube-apiserver's port; 0 picks a free one the first time, which is then
	// persisted in Dir/state.json and reused.
	APIServerPort int32
	// ControllerManager runs kube-controller-manager, Scheduler kube-scheduler and Kwok kwok,
	// which simulates the Nodes annotated kwok.x-k8s.io/node=fake and the Pods on them.
	ControllerManager, Scheduler, Kwok bool
	// ServiceClusterIPRange is the service range; default 10.96.0.0/12.
	ServiceClusterIPRange string
	// CA, when set, is the cluster CA to use instead of the one on disk or a new one: after a
	// move, the restored CA keeps the cluster's credentials valid. Leaf certificates that the
	// previous CA signed are reissued.
	CA *pki.KeyPair
	// RealNodes, when set, readies the control plane for real nodes (package realnode): the
	// cluster's node network on this host, kube-apiserver advertised at its gateway and
	// authorizing kubelets (Node authorizer, NodeRestriction, bootstrap tokens), and
	// kube-controller-manager signing kubelet client certificates and giving Nodes Pod ranges.
	// Nil keeps a control plane for simulated workers only.
	RealNodes *RealNodes
	// ManagedBy is the API server URL of the management cluster whose controllers run this
	// control plane. Recorded in Dir/state.json (see Describe), it lets that management cluster's
	// deletion find its local workload clusters when its API server does not answer. Empty
	// keeps what was recorded.
	ManagedBy string
	// UnsafeNoFsync runs etcd with --unsafe-no-fsync: faster writes, at the price of losing
	// recent writes (or the whole member) if the machine crashes. For tests and throw-away
	// clusters; a management cluster should leave it off.
	UnsafeNoFsync bool

	// apiserverCgroup is the cgroup v2 directory kube-apiserver starts in (ensureEgress).
	apiserverCgroup string
}

// RealNodes is what a control plane needs to know about its cluster's real nodes.
type RealNodes struct {
	// Network is the node network (package nodenet). Zero: one is chosen the first time
	// (nodenet.ChooseNetwork) and kept in Dir/state.json.
	Network netip.Prefix
	// PodCIDR is the cluster's Pod range, of which kube-controller-manager gives each Node a /24.
	PodCIDR string
	// Mirror is the host:port of the image registry the nodes pull from, on loopback
	// (nodenet.LoopbackPort); the nodes reach it at the gateway (realnode.Config.Mirror).
	Mirror string
}

// HomeDir returns $FLOTILLA_HOME, or ~/.flotilla when it is unset.
func HomeDir() string {
	if home := os.Getenv(HomeEnv); home != "" {
		return home
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ".flotilla"
	}
	return filepath.Join(home, ".flotilla")
}

// ClusterDir returns the directory of cluster name under home: <home>/clusters/<name>.
func ClusterDir(home, name string) string {
	return filepath.Join(home, "clusters", name)
}

var namePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// complete returns cfg with defaults filled in, or an error naming the invalid field.
func (cfg Config) complete() (Config, error) {
	if !namePattern.MatchString(cfg.Name) || len(cfg.Name) > 253 {
		return cfg, fmt.Errorf("control plane name %q: must be a lower case DNS name", cfg.Name)
	}
	if cfg.Dir == "" {
		cfg.Dir = ClusterDir(HomeDir(), cfg.Name)
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return cfg, fmt.Errorf("control plane directory %q: %w", cfg.Dir, err)
	}
	cfg.Dir = dir
	if cfg.Host == "" {
		cfg.Host = DefaultHost
	}
	if ip := net.ParseIP(cfg.Host); ip == nil || ip.IsUnspecified() {
		return cfg, fmt.Errorf("control plane host %q: must be the IP address of an interface of this machine, e.g. 127.0.0.1", cfg.Host)
	}
	if cfg.ServiceClusterIPRange == "" {
		cfg.ServiceClusterIPRange = DefaultServiceClusterIPRange
	}
	if _, err := pki.FirstServiceIP(cfg.ServiceClusterIPRange); err != nil {
		return cfg, err
	}
	if cfg.APIServerPort < 0 {
		return cfg, fmt.Errorf("kube-apiserver port %d: must be 0 (pick a free one) or a port number", cfg.APIServerPort)
	}
	if err := cfg.RealNodes.validate(); err != nil {
		return cfg, err
	}
	if cfg.RealNodes != nil && !net.ParseIP(cfg.Host).IsLoopback() {
		return cfg, fmt.Errorf("control plane host %q: real nodes reach kube-apiserver through a forward to loopback; keep it on 127.0.0.1", cfg.Host)
	}
	if cfg.Binaries.Dir == "" {
		return cfg, errors.New("no control plane binaries given: use binaries.Find(binaries.DefaultRoot(), version)")
	}
	if err := cfg.Binaries.Check(cfg.programs()...); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// programs lists the programs cfg runs, in start order.
func (cfg Config) programs() []string {
	names := []string{binaries.Etcd, binaries.KubeAPIServer}
	if cfg.ControllerManager {
		names = append(names, binaries.KubeControllerManager)
	}
	if cfg.Scheduler {
		names = append(names, binaries.KubeScheduler)
	}
	if cfg.Kwok {
		names = append(names, binaries.Kwok)
	}
	return names
}

// validate checks r; a nil r is valid.
func (r *RealNodes) validate() error {
	if r == nil {
		return nil
	}
	if r.Network.IsValid() {
		if err := nodenet.ValidateNetwork(r.Network); err != nil {
			return fmt.Errorf("node network: %w", err)
		}
	}
	pods, err := netip.ParsePrefix(r.PodCIDR)
	if err != nil || !pods.Addr().Is4() || pods.Bits() > 24 {
		return fmt.Errorf("pod range %q: want an IPv4 range of /24 or larger, such as 192.168.0.0/16", r.PodCIDR)
	}
	if r.Network.IsValid() && r.Network.Overlaps(pods) {
		return fmt.Errorf("pod range %s overlaps the node network %s", pods, r.Network)
	}
	if _, err := nodenet.LoopbackPort(r.Mirror); err != nil {
		return fmt.Errorf("image mirror: %w", err)
	}
	return nil
}

// mirrorPort is the port of the image mirror (validate checked it).
func (r *RealNodes) mirrorPort() uint16 {
	port, _ := nodenet.LoopbackPort(r.Mirror)
	return port
}
