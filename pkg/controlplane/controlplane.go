package controlplane

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/pki"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
)

// StopTimeout is how long Stop waits for a process after SIGTERM before it sends SIGKILL.
const StopTimeout = process.DefaultStopTimeout

// DefaultReadyTimeout bounds WaitReady when its context has no deadline.
const DefaultReadyTimeout = 2 * time.Minute

// Status is what Ensure found and did.
type Status struct {
	// Host and Port are kube-apiserver's endpoint.
	Host string
	Port int32
	// Server is the endpoint as a URL, https://Host:Port.
	Server string
	// CA is the cluster CA, certificate and key.
	CA pki.KeyPair
	// Processes are the processes that run, in start order.
	Processes []ProcessStatus
	// NodeNetwork is the node network of a control plane with real nodes (Config.RealNodes),
	// whose first address is the gateway.
	NodeNetwork netip.Prefix
}

// ProcessStatus is one process of a control plane, or another process recorded in its
// directory (the manager of a management cluster).
type ProcessStatus struct {
	// Name is the program: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok,
	// or the other process's name.
	Name string
	// PID is its process id; 0 when it does not run because it waits out its back-off after
	// exiting (History says why and until when).
	PID int
	// Adopted is true when it was already running, false when Ensure started it.
	Adopted bool
	// Restarted is true when Ensure started it again after it had exited.
	Restarted bool
	// Started is when it last started.
	Started time.Time
	// History counts its exits and restarts (package process).
	History process.History
	// Log is its log file.
	Log string
}

// Ensure makes the control plane of cfg run, without waiting for it to be ready (see
// WaitReady). It is idempotent and cheap when everything runs: it creates the PKI when missing,
// chooses the ports once and persists them in Dir/state.json, adopts the processes that run,
// starts the missing ones (etcd first), restarts dead ones and those whose flags or files
// changed, and stops the optional ones cfg no longer wants. It never starts a duplicate.
func Ensure(ctx context.Context, cfg Config) (*Status, error) {
	cfg, err := cfg.complete()
	if err != nil {
		return nil, err
	}
	l := layout(cfg.Dir)
	keeper := l.keeper()
	unlock, err := keeper.Lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()

	for _, dir := range []string{l.path("pki"), l.etcdData(), l.kwokDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	st, err := loadState(l.state())
	if err != nil {
		return nil, err
	}
	desired, err := choosePorts(cfg, keeper, st)
	if err != nil {
		return nil, err
	}
	if desired, err = ensureNodeNetwork(ctx, cfg, l, desired); err != nil {
		return nil, err
	}
	if cfg.ManagedBy != "" {
		desired.ManagedBy = cfg.ManagedBy
	}
	if desired != st {
		if err := saveState(l.state(), desired); err != nil {
			return nil, err
		}
	}
	st = desired
	if cfg, err = ensureEgress(ctx, cfg, l, st); err != nil {
		return nil, err
	}

	server := "https://" + hostPort(st.Host, st.APIServerPort)
	ca, err := ensurePKI(cfg, l, st, server)
	if err != nil {
		return nil, err
	}
	if cfg.Kwok {
		if _, err := writeIfChanged(l.kwokConfig(), kwokStages); err != nil {
			return nil, err
		}
	}

	if err := stopChanged(ctx, cfg, l, st, keeper); err != nil {
		return nil, err
	}
	processes, err := ensureProcesses(ctx, cfg, l, st, keeper)
	if err != nil {
		var inUse *process.PortInUseError
		if errors.As(err, &inUse) && inUse.Name == binaries.KubeAPIServer {
			return nil, fmt.Errorf("cannot start kube-apiserver of %s: %s is in use by another program; stop that program, or give the control plane another port (set Config.APIServerPort, or remove %s to pick a free one)",
				cfg.Name, inUse.Address, l.state())
		}
		return nil, err
	}
	status := &Status{Host: st.Host, Port: st.APIServerPort, Server: server, CA: *ca, Processes: processes}
	if cfg.RealNodes != nil {
		status.NodeNetwork = st.nodeNetwork()
	}
	if st.KubernetesVersion != cfg.Binaries.Version {
		st.KubernetesVersion = cfg.Binaries.Version
		if err := saveState(l.state(), st); err != nil {
			return nil, err
		}
	}
	return status, nil
}

// stopChanged stops, kwok first and etcd last, the running processes that Ensure is about to
// restart because their command line or inputs changed, before any of them starts again. An
// upgrade changes all of them: restarted one by one in start order, etcd waits seconds for
// kube-apiserver's watches to end, and kube-apiserver then spends its whole stop timeout on an
// etcd that just went away (17 s in all). Stopped dependants first, etcd stops at once, and
// kube-apiserver gets its stopGrace.
func stopChanged(ctx context.Context, cfg Config, l layout, st state, keeper process.Keeper) error {
	for _, c := range slices.Backward(components) {
		if !c.enabled(cfg) {
			continue
		}
		spec, err := c.processSpec(cfg, l, st)
		if err != nil {
			return fmt.Errorf("preparing %s: %w", c.name, err)
		}
		if !keeper.Differs(spec) {
			continue
		}
		ctrl.LoggerFrom(ctx).Info("Stopping control plane process to restart it with a changed command line or inputs", "cluster", cfg.Name, "process", c.name)
		if err := keeper.Stop(ctx, c.name, cmp.Or(c.stopGrace, StopTimeout)); err != nil {
			return err
		}
	}
	return nil
}

// choosePorts returns the state with every port chosen: kept from st when set, taken from cfg
// for kube-apiserver, picked free otherwise. etcd's ports, which only kube-apiserver dials, are
// picked again when etcd is not running and another program took them.
func choosePorts(cfg Config, keeper process.Keeper, st state) (state, error) {
	st.Host = cfg.Host
	if cfg.APIServerPort != 0 {
		st.APIServerPort = cfg.APIServerPort
	}
	_, etcdRunning := keeper.Running(binaries.Etcd)
	for _, p := range []struct {
		port     *int32
		host     string
		reusable bool
	}{
		{&st.APIServerPort, st.Host, true},
		{&st.EtcdClientPort, "127.0.0.1", etcdRunning || portFree("127.0.0.1", st.EtcdClientPort)},
		{&st.EtcdPeerPort, "127.0.0.1", etcdRunning || portFree("127.0.0.1", st.EtcdPeerPort)},
	} {
		if *p.port != 0 && p.reusable {
			continue
		}
		port, err := PickPort(p.host)
		if err != nil {
			return st, err
		}
		*p.port = port
	}
	return st, nil
}

// ensureProcesses runs every enabled component in start order (adopting what runs, restarting
// what changed, starting again what exited unless it waits out its back-off), stops the disabled
// ones, and reports every other process recorded in the directory (a management cluster's
// manager) after them.
func ensureProcesses(ctx context.Context, cfg Config, l layout, st state, keeper process.Keeper) ([]ProcessStatus, error) {
	if err := checkPorts(ctx, cfg, l, st, keeper); err != nil {
		return nil, err
	}
	var out []ProcessStatus
	ours := map[string]bool{}
	for _, c := range components {
		ours[c.name] = true
		if !c.enabled(cfg) {
			if err := keeper.Stop(ctx, c.name, StopTimeout); err != nil {
				return nil, err
			}
			continue
		}
		spec, err := c.processSpec(cfg, l, st)
		if err != nil {
			return nil, fmt.Errorf("preparing %s: %w", c.name, err)
		}
		p, err := keeper.Ensure(ctx, spec)
		var inUse *process.PortInUseError
		if errors.As(err, &inUse) && p.Name != "" {
			// A process that ran found its port taken when it was to start again: recorded in its
			// history, with a back-off, and reported like any process that waits (PID 0).
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w (see %s)", err, keeper.LogPath(c.name))
		}
		switch {
		case p.PID == 0:
			ctrl.LoggerFrom(ctx).Info("Control plane process waits out its back-off", "cluster", cfg.Name, "process", p.Name,
				"failures", p.History.Failures, "lastExit", p.History.LastExit, "nextStart", time.Until(p.History.NextStart).Round(100*time.Millisecond).String())
		case !p.Adopted:
			ctrl.LoggerFrom(ctx).Info("Started control plane process", "cluster", cfg.Name, "process", p.Name, "pid", p.PID, "restarted", p.Restarted)
		}
		out = append(out, processStatus(p, keeper))
	}
	names, err := keeper.Names()
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if p, recorded := keeper.Inspect(name); recorded && !ours[name] {
			out = append(out, processStatus(p, keeper))
		}
	}
	return out, nil
}

// checkPorts checks, before anything starts, that the ports of every enabled component that was
// never started are free, so that a taken port leaves nothing half-started. (A component that ran
// before and finds its port taken when it starts again waits out a back-off instead.)
func checkPorts(ctx context.Context, cfg Config, l layout, st state, keeper process.Keeper) error {
	for _, c := range components {
		if !c.enabled(cfg) {
			continue
		}
		if _, recorded := keeper.Inspect(c.name); recorded {
			continue
		}
		if err := process.CheckPorts(ctx, c.spec(cfg, l, st)); err != nil {
			return err
		}
	}
	return nil
}

// processStatus describes p.
func processStatus(p process.Process, keeper process.Keeper) ProcessStatus {
	return ProcessStatus{Name: p.Name, PID: p.PID, Adopted: p.Adopted, Restarted: p.Restarted, Started: p.Started, History: p.History, Log: keeper.LogPath(p.Name)}
}

// Ready checks once whether kube-apiserver answers /readyz with ok, and returns its version
// from /version.
func Ready(ctx context.Context, cfg Config) (string, error) {
	client, server, err := adminHTTPClient(cfg)
	if err != nil {
		return "", err
	}
	body, err := get(ctx, client, server+"/readyz")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(body) != "ok" {
		return "", fmt.Errorf("%s/readyz: %s", server, body)
	}
	body, err = get(ctx, client, server+"/version")
	if err != nil {
		return "", err
	}
	var info struct {
		GitVersion string `json:"gitVersion"`
	}
	if err := json.Unmarshal([]byte(body), &info); err != nil {
		return "", fmt.Errorf("parsing %s/version: %w", server, err)
	}
	return info.GitVersion, nil
}

// WaitReady waits until Ready succeeds or the context ends (DefaultReadyTimeout without a
// deadline). Meanwhile it keeps etcd and kube-apiserver running as the supervisor does
// (process.Keeper.Keep, under the directory's lock), and fails early, with the end of the
// log, when one of them crash loops or is no longer recorded (stopped, deleted).
func WaitReady(ctx context.Context, cfg Config) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultReadyTimeout)
		defer cancel()
	}
	if cfg.Dir == "" {
		cfg.Dir = ClusterDir(HomeDir(), cfg.Name)
	}
	keeper := layout(cfg.Dir).keeper()
	var lastErr error
	for delay := 50 * time.Millisecond; ; delay = min(delay*2, 250*time.Millisecond) {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, lastErr = Ready(attempt, cfg)
		cancel()
		if lastErr == nil {
			return nil
		}
		if err := keepServing(ctx, cfg.Name, keeper); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for kube-apiserver of %s to be ready: %w; last error: %v; see %s",
				cfg.Name, ctx.Err(), lastErr, keeper.LogPath(binaries.KubeAPIServer))
		case <-time.After(delay):
		}
	}
}

// keepServing starts etcd and kube-apiserver again when they exited, and returns an error with
// the end of its log for the first that crash loops or is not recorded.
func keepServing(ctx context.Context, cluster string, keeper process.Keeper) error {
	for _, name := range []string{binaries.Etcd, binaries.KubeAPIServer} {
		if _, running := keeper.Running(name); running {
			continue
		}
		p, err := keepLocked(ctx, keeper, name)
		if err == nil && !p.History.CrashLooping(p.PID != 0, p.Started, time.Now()) {
			continue
		}
		why := "is not running"
		if err == nil {
			why = fmt.Sprintf("keeps exiting (%d times in a row, last: %s)", p.History.Failures, p.History.LastExit)
		}
		return fmt.Errorf("%s of %s %s; the end of %s:\n%s", name, cluster, why, keeper.LogPath(name), keeper.LogTail(name, 20))
	}
	return nil
}

// keepLocked is process.Keeper.Keep under the directory's lock.
func keepLocked(ctx context.Context, keeper process.Keeper, name string) (process.Process, error) {
	unlock, ok, err := keeper.LockExisting(ctx)
	if err != nil {
		return process.Process{}, err
	}
	if !ok {
		return process.Process{}, fmt.Errorf("%s was removed", keeper.RunDir)
	}
	defer unlock()
	return keeper.Keep(ctx, name)
}

// Stop stops every process of the control plane in dir: kwok, the scheduler and the controller
// manager first, kube-apiserver, then etcd; each gets SIGTERM and its grace (StopTimeout, or
// less for kube-apiserver) before SIGKILL. Their records go, so no supervisor starts them
// again. Data and PKI stay, so Ensure starts the same cluster again.
func Stop(ctx context.Context, dir string) error {
	l := layout(dir)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	unlock, err := l.keeper().Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return stopAll(ctx, l)
}

func stopAll(ctx context.Context, l layout) error {
	keeper := l.keeper()
	var errs []error
	for _, c := range slices.Backward(components) {
		errs = append(errs, keeper.Stop(ctx, c.name, cmp.Or(c.stopGrace, StopTimeout)))
	}
	errs = append(errs, keeper.StopAll(ctx, StopTimeout)) // anything else recorded there
	return errors.Join(errs...)
}

// Delete stops the control plane in dir and removes the directory. It refuses a directory that
// does not look like a control plane's. Real nodes left in it are deleted first (package
// realnode), and the host side of the node network after the processes.
func Delete(ctx context.Context, dir string) error {
	l := layout(dir)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if !looksLikeControlPlane(l) {
		return fmt.Errorf("refusing to delete %s: it holds no control plane (no state.json, pki/ or run/)", dir)
	}
	unlock, err := l.keeper().Lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := realnode.DeleteAll(ctx, l.nodesDir()); err != nil {
		return err
	}
	if err := stopAll(ctx, l); err != nil {
		return err
	}
	if err := deleteNodeNetwork(ctx, l); err != nil {
		return err
	}
	if err := deleteEgress(ctx, l); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	return nil
}

// Info is what a control plane directory records about its cluster.
type Info struct {
	// Dir is the directory; Name, its base name, the cluster's name.
	Dir, Name string
	// Server is kube-apiserver's URL, https://host:port.
	Server string
	// KubernetesVersion is the version of the binaries last started.
	KubernetesVersion string
	// ManagedBy is Config.ManagedBy as last given.
	ManagedBy string
}

// Describe returns what the control plane in dir recorded in its state.json; an error when it
// has not chosen its endpoint yet.
func Describe(dir string) (Info, error) {
	_, st, err := endpoint(Config{Name: filepath.Base(dir), Dir: dir})
	if err != nil {
		return Info{}, err
	}
	return Info{Dir: dir, Name: filepath.Base(dir), Server: "https://" + hostPort(st.Host, st.APIServerPort),
		KubernetesVersion: st.KubernetesVersion, ManagedBy: st.ManagedBy}, nil
}

func looksLikeControlPlane(l layout) bool {
	for _, p := range []string{l.state(), l.path("pki"), l.path("run")} {
		if _, err := os.Stat(p); err == nil {
			return true
		}
	}
	return false
}

// AdminKubeconfig returns a kubeconfig for the admin (group system:masters) of the control plane:
// server https://host:port, the CA and the admin client certificate, embedded. Ensure must have
// run once.
func AdminKubeconfig(cfg Config) ([]byte, error) {
	l, st, err := endpoint(cfg)
	if err != nil {
		return nil, err
	}
	ca, admin, err := loadAdmin(l)
	if err != nil {
		return nil, err
	}
	return pki.Kubeconfig(cfg.Name, "https://"+hostPort(st.Host, st.APIServerPort), ca.CertPEM, adminCommonName, admin)
}

// endpoint returns the layout and the state of cfg's control plane, with cfg's host and port
// when set.
func endpoint(cfg Config) (layout, state, error) {
	if cfg.Dir == "" {
		cfg.Dir = ClusterDir(HomeDir(), cfg.Name)
	}
	l := layout(cfg.Dir)
	st, err := loadState(l.state())
	if err != nil {
		return l, st, err
	}
	if cfg.Host != "" {
		st.Host = cfg.Host
	}
	if cfg.APIServerPort != 0 {
		st.APIServerPort = cfg.APIServerPort
	}
	if st.Host == "" || st.APIServerPort == 0 {
		return l, st, fmt.Errorf("control plane %s in %s has no endpoint yet: call Ensure first", cfg.Name, cfg.Dir)
	}
	return l, st, nil
}

func loadAdmin(l layout) (ca, admin *pki.KeyPair, err error) {
	ca, err = pki.LoadKeyPair(l.pki(caCert), l.pki(caKey))
	if err != nil {
		return nil, nil, fmt.Errorf("loading the CA of %s (call Ensure first): %w", l, err)
	}
	admin, err = pki.LoadKeyPair(l.pki(adminCert), l.pki(adminKey))
	if err != nil {
		return nil, nil, fmt.Errorf("loading the admin certificate of %s (call Ensure first): %w", l, err)
	}
	return ca, admin, nil
}

func adminHTTPClient(cfg Config) (*http.Client, string, error) {
	l, st, err := endpoint(cfg)
	if err != nil {
		return nil, "", err
	}
	ca, admin, err := loadAdmin(l)
	if err != nil {
		return nil, "", err
	}
	cert, err := tls.X509KeyPair(admin.CertPEM, admin.KeyPEM)
	if err != nil {
		return nil, "", fmt.Errorf("loading the admin certificate: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	transport := &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true,
	}
	return &http.Client{Transport: transport}, "https://" + hostPort(st.Host, st.APIServerPort), nil
}

func get(ctx context.Context, client *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return string(body), nil
}
