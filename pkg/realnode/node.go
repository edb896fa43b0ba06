package realnode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/filelock"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// inputsEnv names the environment variable that carries a digest of the files a process reads
// at start: the process is restarted when one of them changes (as in package controlplane).
const inputsEnv = "FLOTILLA_INPUTS_DIGEST"

// StopTimeout is how long Delete's processes get after SIGTERM; the rest are killed with the
// node's cgroup.
const StopTimeout = 5 * time.Second

// Status is what Ensure found and did.
type Status struct {
	// Address is the node's address in its cluster's node network.
	Address netip.Addr
	// Processes are the node's processes, in start order.
	Processes []ProcessStatus
	// Bootstrapped is true once kubelet has its client certificate from the cluster: the
	// bootstrap token is no longer needed, and kube-proxy runs.
	Bootstrapped bool
}

// ProcessStatus is one process of a node.
type ProcessStatus struct {
	// Name is the program: containerd, kubelet, kube-proxy.
	Name string
	// PID is its process id; 0 while it waits out its back-off.
	PID int
	// Started is true when Ensure started it (first start, restart after an exit or a change).
	Started bool
	// Restarts counts its starts after an exit; Failures its consecutive exits within
	// process.StableAfter of their start (package process's History).
	Restarts, Failures int
	// NextStart is when it is started again, while it waits out its back-off.
	NextStart time.Time
	// LogTail is the end of its log while it fails.
	LogTail string
}

// CrashLooping reports whether the process has failed process.CrashLoopFailures times in a row.
func (p ProcessStatus) CrashLooping() bool { return p.Failures >= process.CrashLoopFailures }

// NeedsBootstrap reports whether the node in dir has no client certificate from its cluster yet,
// so that Ensure needs a Config.BootstrapToken.
func NeedsBootstrap(dir string) bool {
	_, err := os.Stat(newLayout(dir).kubeletClientCert())
	return err != nil
}

// BootstrapToken returns the bootstrap token the node in dir was last given, "" when it has
// none (it never had one, or it has joined), so that the caller keeps using the same token.
func BootstrapToken(dir string) string {
	// kubelet's directory is the node's: a link there to a kubeconfig of the host is not read.
	f, err := os.OpenFile(newLayout(dir).bootstrapKubeconfig(), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	data, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return ""
	}
	kc, err := clientcmd.Load(data)
	if err != nil {
		return ""
	}
	for _, auth := range kc.AuthInfos {
		return auth.Token
	}
	return ""
}

// Ensure makes the node of cfg run, without waiting for it to be Ready. It is idempotent and
// cheap when everything runs: it checks the host's programs, chooses the node's address once,
// writes the configuration files that changed, makes the namespaces, network and cgroups that
// are missing, and starts or adopts containerd and kubelet (and kube-proxy once kubelet has its
// certificate). A process that exited is started again under package process's restart policy;
// one whose flags, programs (a new Kubernetes version) or configuration changed is restarted.
func Ensure(ctx context.Context, cfg Config) (*Status, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	l := newLayout(cfg.Dir)
	if err := os.MkdirAll(l.dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", l.dir, err)
	}
	unlock, err := filelock.Lock(ctx, l.lock())
	if err != nil {
		return nil, err
	}
	defer unlock()

	st, err := loadState(l.state())
	if err != nil {
		return nil, err
	}
	if st, err = chooseAddress(ctx, cfg, l, st); err != nil {
		return nil, err
	}
	if st, err = chooseIDs(ctx, l, st); err != nil {
		return nil, err
	}
	addr, _ := netip.ParseAddr(st.Address)
	if err := writeFiles(cfg, l, st.IDBase); err != nil {
		return nil, err
	}
	cgroup, err := ensureCgroups(l, st.IDBase)
	if err != nil {
		return nil, err
	}
	if err := ensureInit(cfg, l, cgroup, st.IDBase); err != nil {
		return nil, err
	}
	mirrorPort, err := cfg.mirrorPort()
	if err != nil {
		return nil, err
	}
	node := nodenet.Node{
		ID: l.id, Cluster: nodenet.Cluster{ID: nodenet.ClusterID(cfg.clusterDir()), Network: cfg.Network}, Address: addr,
		LoopbackForwards: []uint16{mirrorPort},
	}
	if err := nodenet.EnsureNode(ctx, node, l.netNS()); err != nil {
		return nil, err
	}
	status := &Status{Address: addr, Bootstrapped: !NeedsBootstrap(l.dir)}
	specs, err := processSpecs(cfg, l, addr, cgroup, status.Bootstrapped)
	if err != nil {
		return nil, err
	}
	keeper := l.keeper()
	for _, spec := range specs {
		p, err := ensureProcess(ctx, keeper, spec)
		if err != nil {
			return nil, err
		}
		status.Processes = append(status.Processes, p)
	}
	return status, nil
}

// ensureProcess makes spec run under package process's restart policy, and describes it: a
// process that runs as spec says is adopted; one that exited is started again once its back-off
// is over, and meanwhile reported with PID 0 and the end of its log.
func ensureProcess(ctx context.Context, keeper process.Keeper, spec process.Spec) (ProcessStatus, error) {
	p, err := keeper.Ensure(ctx, spec)
	if err != nil {
		return ProcessStatus{}, fmt.Errorf("%w (see %s)", err, keeper.LogPath(spec.Name))
	}
	status := ProcessStatus{
		Name: spec.Name, PID: p.PID, Started: p.PID != 0 && !p.Adopted,
		Restarts: p.History.Restarts, Failures: p.History.Failures,
	}
	if p.PID == 0 {
		status.NextStart = p.History.NextStart
	}
	if p.History.Failures > 0 {
		status.LogTail = keeper.LogTail(spec.Name, 10)
	}
	return status, nil
}

// writeFiles makes the node's directories and writes its configuration files that changed,
// which it gives to the node's root (base) to read.
func writeFiles(cfg Config, l layout, base uint32) error {
	// The node's directory, and those in it that the manager writes into, are the host root's,
	// readable by the node; the node's root owns only what it writes (nodeOwned), so that
	// nothing the manager writes or creates goes through a link the node made.
	readable := []string{l.dir, l.path("pki"), l.path("containerd"), l.certsDir(), l.path("cni"), l.path("kube-proxy"), l.sysctlDir()}
	for _, registry := range MirroredRegistries {
		readable = append(readable, filepath.Join(l.certsDir(), registry))
	}
	for _, dir := range readable {
		if err := os.MkdirAll(dir, 0o755); err != nil { //nolint:gosec // the node reads them
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		if err := os.Lchown(dir, 0, 0); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // the node reads them
			return err
		}
	}
	for _, dir := range append(l.nodeOwned(), l.path("run"), l.path("logs"), l.kubeletRootMount(), l.rootfs()) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	// Each node's root reaches its runtime directory (its init mounts its root file system
	// there), and no other's: RuntimeRoot is only traversable by others.
	if err := os.Chmod(RuntimeRoot, 0o711); err != nil { //nolint:gosec // traversable, not listable
		return fmt.Errorf("opening %s to real nodes: %w", RuntimeRoot, err)
	}

	runc, err := exec.LookPath("runc")
	if err != nil {
		return fmt.Errorf("%w: runc: %v", ErrPrerequisite, err)
	}
	kubelet, err := kubeletConfig(cfg, l)
	if err != nil {
		return fmt.Errorf("rendering kubelet's configuration: %w", err)
	}
	proxy, err := kubeProxyConfig(cfg, l)
	if err != nil {
		return fmt.Errorf("rendering kube-proxy's configuration: %w", err)
	}
	files := map[string][]byte{
		l.caCert():           cfg.CACert,
		l.containerdConfig(): []byte(containerdConfig(cfg, l, runc)),
		l.cniTemplate():      []byte(cniTemplate(l)),
		l.kubeletConfig():    kubelet,
		l.kubeProxyConfig():  proxy,
		l.resolvConf():       []byte(resolvConf),
	}
	for _, registry := range MirroredRegistries {
		files[filepath.Join(l.certsDir(), registry, "hosts.toml")] = []byte(hostsTOML(cfg.Mirror, registry, l.mirrorCA()))
	}
	if len(cfg.Mirror.Connection.CAData) > 0 {
		files[l.mirrorCA()] = cfg.Mirror.Connection.CAData
	} else if err := os.Remove(l.mirrorCA()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the image mirror's CA: %w", err)
	}
	for name, value := range kernelSettings {
		files[l.sysctlFile(name)] = []byte(value + "\n")
	}
	if NeedsBootstrap(l.dir) {
		if cfg.BootstrapToken == "" {
			return errors.New("the node has no client certificate yet: a bootstrap token is required")
		}
		data, err := bootstrapKubeconfig(cfg)
		if err != nil {
			return fmt.Errorf("rendering the bootstrap kubeconfig: %w", err)
		}
		files[l.bootstrapKubeconfig()] = data
	} else if err := os.Remove(l.bootstrapKubeconfig()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the bootstrap kubeconfig: %w", err)
	}
	var read []string
	for path, data := range files {
		if err := writeIfChanged(path, data); err != nil {
			return err
		}
		read = append(read, path)
	}
	// The node's programs read them (a file is the node's root's, in a directory that is not).
	return chown(base, read...)
}

// writeIfChanged writes data to path (0600) unless it already holds it.
func writeIfChanged(path string, data []byte) error {
	if current, err := os.ReadFile(path); err == nil && bytes.Equal(current, data) { //nolint:gosec // the node's own files
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.Write(path, data)
}

// processSpecs are the node's processes, in start order: containerd, kubelet, and kube-proxy
// once kubelet has its certificate (it runs with kubelet's credentials).
func processSpecs(cfg Config, l layout, addr netip.Addr, cgroup string, bootstrapped bool) ([]process.Spec, error) {
	path := "PATH=" + cfg.Binaries.Dir + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	in := func(spec process.Spec, inputs ...string) (process.Spec, error) {
		spec.Dir, spec.Namespaces, spec.Cgroup = l.dir, l.namespaces(), cgroup
		digest, err := digestFiles(inputs)
		if err != nil {
			return spec, err
		}
		spec.Env = append(spec.Env, path, inputsEnv+"="+digest)
		return spec, nil
	}
	var hosts []string
	for _, registry := range MirroredRegistries {
		hosts = append(hosts, filepath.Join(l.certsDir(), registry, "hosts.toml"))
	}
	containerd, err := in(process.Spec{
		Name: binaries.Containerd, Path: cfg.Binaries.Path(binaries.Containerd),
		Args: []string{"--config", l.containerdConfig()},
	}, append([]string{l.containerdConfig(), l.cniTemplate()}, hosts...)...)
	if err != nil {
		return nil, err
	}
	kubelet, err := in(process.Spec{
		Name: binaries.Kubelet, Path: cfg.Binaries.Path(binaries.Kubelet), Args: kubeletArgs(cfg, l, addr),
	}, l.kubeletConfig(), l.caCert())
	if err != nil {
		return nil, err
	}
	specs := []process.Spec{containerd, kubelet}
	if bootstrapped {
		proxy, err := in(process.Spec{
			Name: binaries.KubeProxy, Path: cfg.Binaries.Path(binaries.KubeProxy), Args: []string{"--config=" + l.kubeProxyConfig()},
		}, l.kubeProxyConfig())
		if err != nil {
			return nil, err
		}
		specs = append(specs, proxy)
	}
	return specs, nil
}

func digestFiles(paths []string) (string, error) {
	h := sha256.New()
	for _, path := range paths {
		data, err := os.ReadFile(path) //nolint:gosec // the node's own files
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		h.Write(sum[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// SetPodRoutes routes the Pod ranges of the cluster's other nodes in the network namespace of
// the node in dir (see nodenet.SetPodRoutes).
func SetPodRoutes(dir string, routes []nodenet.PodRoute) error {
	return nodenet.SetPodRoutes(newLayout(dir).netNS(), routes)
}

// Memory returns the resident memory of the node's own processes (kubelet, containerd, its
// shims, kube-proxy), in bytes by program.
func Memory(dir string) (map[string]uint64, error) {
	return nodeMemory(newLayout(dir))
}

// Delete removes the node in dir from the host: it stops kubelet, kills every process of the
// node (containers included) through its cgroups, releases its namespaces (and with them its
// mounts, Pod networks and interfaces), and removes its cgroups, runtime directory and dir.
// Nothing of the node is left: a node that is half gone is finished off, and one that is gone
// is not an error. Draining is the caller's business (Cluster API drains a Machine's Node before
// its infrastructure goes).
func Delete(ctx context.Context, dir string) error {
	l := newLayout(dir)
	_, statErr := os.Stat(dir)
	if errors.Is(statErr, fs.ErrNotExist) && !kept(l.netNS()) && !kept(l.mountNS()) {
		return nil
	}
	if statErr == nil {
		unlock, err := filelock.Lock(ctx, l.lock())
		if err != nil {
			return err
		}
		defer unlock()
		// kubelet first, so that it does not start what the rest is about to lose.
		_ = l.keeper().Stop(ctx, binaries.Kubelet, StopTimeout)
	}
	var errs []error
	if err := killCgroups(l); err != nil {
		errs = append(errs, err)
	}
	if statErr == nil {
		errs = append(errs, l.keeper().StopAll(ctx, time.Second)) // the records of processes now dead
	}
	errs = append(errs, releaseNamespaces(l.namespaces()...))
	if link, err := netlink.LinkByName(nodenet.Node{ID: l.id}.HostVeth()); err == nil {
		errs = append(errs, netlink.LinkDel(link)) // gone with the namespace, unless a process kept it
	}
	errs = append(errs, removeCgroups(l))
	if err := os.RemoveAll(l.runtimeDir()); err != nil {
		errs = append(errs, fmt.Errorf("removing %s: %w", l.runtimeDir(), err))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting node %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return releaseHost()
}

// DeleteAll deletes every node under nodesDir (NodesDir of a cluster).
func DeleteAll(ctx context.Context, nodesDir string) error {
	entries, err := os.ReadDir(nodesDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing %s: %w", nodesDir, err)
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			errs = append(errs, Delete(ctx, filepath.Join(nodesDir, e.Name())))
		}
	}
	return errors.Join(errs...)
}
