package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// managerProcess is the name of the manager's process in its cluster's process.Keeper.
const managerProcess = "manager"

// managerEndpoints is the webhook port a local manager process serves on, recorded in
// <cluster dir>/manager.json so that a restart keeps it. The manager's probes and metrics take
// ports the kernel picks, which it records itself (ManagerServing).
type managerEndpoints struct {
	Webhook int `json:"webhookPort"`
}

// ManagerServing is where a manager serves its probes and metrics (host:port, "" when off), as
// `flotilla manager --endpoints-file` records it.
type ManagerServing struct {
	Health  string `json:"health,omitempty"`
	Metrics string `json:"metrics,omitempty"`
}

// WriteManagerServing records serving at path (0600).
func WriteManagerServing(path string, serving ManagerServing) error {
	data, err := json.Marshal(serving)
	if err != nil {
		return fmt.Errorf("encoding the manager's addresses: %w", err)
	}
	return atomicfile.Write(path, data)
}

// managerCertDir holds the serving certificate the manager of local cluster name makes at start,
// for its webhooks and metrics.
func (c *Client) managerCertDir(name string) string {
	return filepath.Join(c.clusterDir(name), "manager", "certs")
}

// managerServingPath is the file the manager of local cluster name records its ManagerServing
// in.
func (c *Client) managerServingPath(name string) string {
	return filepath.Join(c.clusterDir(name), "manager", "serving.json")
}

// managerServing reads where the manager of local cluster name serves its probes and metrics.
func (c *Client) managerServing(name string) (ManagerServing, error) {
	var serving ManagerServing
	data, err := os.ReadFile(c.managerServingPath(name))
	if err != nil {
		return serving, fmt.Errorf("reading the manager's addresses (it records them once it listens): %w", err)
	}
	if err := json.Unmarshal(data, &serving); err != nil {
		return serving, fmt.Errorf("reading %s: %w", c.managerServingPath(name), err)
	}
	return serving, nil
}

func (c *Client) keeper(name string) process.Keeper {
	return process.InDir(c.clusterDir(name))
}

func (c *Client) managerEndpointsPath(name string) string {
	return filepath.Join(c.clusterDir(name), "manager.json")
}

// managerRunning is true when the manager process of local cluster name runs.
func (c *Client) managerRunning(name string) bool {
	_, ok := c.keeper(name).Running(managerProcess)
	return ok
}

// managerReadyTimeout bounds StartManager's wait for the manager's readiness.
const managerReadyTimeout = 2 * time.Minute

// StartManager makes the manager process of local cluster name run, against that cluster's own
// API server, and waits until it is ready. It first applies the roles of the manager's
// identities and issues or renews their certificates (identities.go). The process outlives the
// CLI, and the supervisor of the home (which StartManager starts when none runs) starts it
// again when it exits.
func (c *Client) StartManager(ctx context.Context, name string) error {
	if err := c.ensureManagerAccess(ctx, name); err != nil {
		return fmt.Errorf("starting the manager of %s: %w", name, err)
	}
	if _, err := c.ensureManagerProcess(ctx, name); err != nil {
		return fmt.Errorf("starting the manager of %s: %w", name, err)
	}
	if err := c.EnsureSupervisor(ctx); err != nil {
		return err
	}
	return waitProcess(ctx, c.keeper(name), managerProcess, "the manager of "+name, managerReadyTimeout, 500*time.Millisecond,
		func(ctx context.Context) error { return c.ManagerReady(ctx, name) })
}

// ensureManagerProcess adopts the manager of name, or starts it (again), under the lock of the
// cluster's run directory. It keeps the endpoints of the last start, so that a manager that
// exited is the same process to the restart policy, unless one of their ports was taken
// meanwhile.
func (c *Client) ensureManagerProcess(ctx context.Context, name string) (process.Process, error) {
	keeper := c.keeper(name)
	unlock, err := keeper.Lock(ctx)
	if err != nil {
		return process.Process{}, err
	}
	defer unlock()
	ep, err := c.managerEndpoints(name)
	_, running := keeper.Running(managerProcess)
	if !running {
		// A manager about to start records where it serves; until then there is no answer.
		if err := os.Remove(c.managerServingPath(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return process.Process{}, err
		}
	}
	if err != nil || ep.Webhook == 0 || (!running && !ep.free()) {
		if ep, err = newManagerEndpoints(); err != nil {
			return process.Process{}, err
		}
		data, err := json.Marshal(ep)
		if err != nil {
			return process.Process{}, fmt.Errorf("encoding manager endpoints: %w", err)
		}
		if err := atomicfile.Write(c.managerEndpointsPath(name), data); err != nil {
			return process.Process{}, err
		}
	}
	proxy, err := c.managementProxy(ctx, name)
	if err != nil {
		return process.Process{}, err
	}
	return keeper.Ensure(ctx, c.managerSpec(name, ep, proxy))
}

// managementProxy is spec.proxy of the management Cluster name in local cluster name's own API
// server: nil when it sets none, or when the API server holds no such Cluster (a bootstrap
// cluster, before the move).
func (c *Client) managementProxy(ctx context.Context, name string) (*flotillav1.ProxyConfiguration, error) {
	kc, err := KubeClient(c.localKubeconfigPath(name))
	if err != nil {
		return nil, err
	}
	list := &flotillav1.ClusterList{}
	if err := kc.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the proxy settings of cluster %s: %w", name, err)
	}
	for _, cl := range list.Items {
		if cl.Name == name && cl.Spec.Management {
			return cl.Spec.Proxy, nil
		}
	}
	return nil, nil
}

// proxyEnv is the environment that sends the HTTP requests of a process through proxy:
// HTTP_PROXY, HTTPS_PROXY and NO_PROXY, as Go's http.ProxyFromEnvironment reads them, which every
// HTTP client of the manager uses (registries, chart repositories, Git over HTTP, API servers).
// Loopback is always reached directly.
func proxyEnv(proxy *flotillav1.ProxyConfiguration) []string {
	if proxy == nil {
		return nil
	}
	var env []string
	if proxy.HTTPProxy != "" {
		env = append(env, "HTTP_PROXY="+proxy.HTTPProxy)
	}
	if proxy.HTTPSProxy != "" {
		env = append(env, "HTTPS_PROXY="+proxy.HTTPSProxy)
	}
	noProxy := append([]string{"localhost", "127.0.0.1", "::1"}, proxy.NoProxy...)
	return append(env, "NO_PROXY="+strings.Join(noProxy, ","))
}

// ensureManagerAccess applies, with the admin kubeconfig of local cluster name, what lets each
// identity of its manager do its work (config.InstallManagerRBAC), and issues the identities'
// certificates, renewing those that are due.
func (c *Client) ensureManagerAccess(ctx context.Context, name string) error {
	kc, err := KubeClient(c.localKubeconfigPath(name))
	if err != nil {
		return err
	}
	if err := config.InstallManagerRBAC(ctx, kc); err != nil {
		return fmt.Errorf("installing the roles of the manager's identities: %w", err)
	}
	_, err = EnsureManagerIdentities(c.clusterDir(name), c.managerIdentitiesDir(name))
	return err
}

// managerSpec is the manager process of local cluster name serving on ep, its HTTP requests
// going through proxy when it is set.
func (c *Client) managerSpec(name string, ep managerEndpoints, proxy *flotillav1.ProxyConfiguration) process.Spec {
	return process.Spec{
		Name: managerProcess,
		Env:  proxyEnv(proxy),
		Path: c.Executable,
		Args: []string{
			"manager",
			// Each identity with its own certificate, never the admin's; the manager renews them.
			"--identities", c.managerIdentitiesDir(name),
			"--renew-identities-from", c.clusterDir(name),
			"--home", c.Home,
			"--bin-dir", c.BinRoot,
			// Probes and metrics on ports the kernel picks, recorded for probeManager.
			"--endpoints-file", c.managerServingPath(name),
			"--webhook-port", strconv.Itoa(ep.Webhook),
			"--webhook-cert-dir", c.managerCertDir(name),
			// It starts the supervisor of the home again should that one stop.
			"--keep-supervisor",
			// No leader election: the supervisor already runs one manager per cluster, and a
			// local manager that missed a lease renewal on a busy machine would exit. (In a
			// real cluster, replicas elect a leader.)
		},
		Ports: []string{ep.webhookAddress()},
	}
}

// newManagerEndpoints picks a free loopback port for a manager's webhooks.
func newManagerEndpoints() (managerEndpoints, error) {
	port, err := controlplane.PickPort("127.0.0.1")
	if err != nil {
		return managerEndpoints{}, err
	}
	return managerEndpoints{Webhook: int(port)}, nil
}

// free reports whether the port of ep is free.
func (ep managerEndpoints) free() bool {
	return process.PortFree(ep.webhookAddress())
}

func (ep managerEndpoints) webhookAddress() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ep.Webhook))
}

// managerEndpoints reads the endpoints the manager of name was last started with.
func (c *Client) managerEndpoints(name string) (managerEndpoints, error) {
	var ep managerEndpoints
	data, err := os.ReadFile(c.managerEndpointsPath(name))
	if err != nil {
		return ep, fmt.Errorf("reading the manager's endpoints: %w", err)
	}
	if err := json.Unmarshal(data, &ep); err != nil {
		return ep, fmt.Errorf("reading %s: %w", c.managerEndpointsPath(name), err)
	}
	return ep, nil
}

// ManagerReady returns nil when the manager of local cluster name answers its readiness probe.
func (c *Client) ManagerReady(ctx context.Context, name string) error {
	return c.probeManager(ctx, name, "/readyz")
}

// probeManager asks the manager of local cluster name for one of its probes, /healthz or /readyz.
func (c *Client) probeManager(ctx context.Context, name, path string) error {
	serving, err := c.managerServing(name)
	if err != nil {
		return err
	}
	if serving.Health == "" {
		return fmt.Errorf("manager %s: the manager serves no probes", path)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+serving.Health+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("manager %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("manager %s: %s", path, resp.Status)
	}
	return nil
}

// stopManager stops the manager process of local cluster name if it runs; the supervisor does
// not start it again.
func (c *Client) stopManager(ctx context.Context, name string) error {
	if _, err := os.Stat(c.clusterDir(name)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := stopLocked(ctx, c.keeper(name), managerProcess); err != nil {
		return fmt.Errorf("stopping the manager of %s: %w", name, err)
	}
	return nil
}
