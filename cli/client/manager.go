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
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// managerProcess is the name of the manager's process in its cluster's supervisor.
const managerProcess = "manager"

// managerEndpoints are the loopback addresses a local manager process serves on, recorded in
// <cluster dir>/manager.json so that later commands can check its health.
type managerEndpoints struct {
	Health  string `json:"health"`
	Metrics string `json:"metrics"`
	Webhook int    `json:"webhookPort"`
}

func (c *Client) supervisor(name string) process.Supervisor {
	dir := c.clusterDir(name)
	return process.Supervisor{RunDir: filepath.Join(dir, "run"), LogDir: filepath.Join(dir, "logs")}
}

func (c *Client) managerEndpointsPath(name string) string {
	return filepath.Join(c.clusterDir(name), "manager.json")
}

// managerRunning is true when the manager process of local cluster name runs.
func (c *Client) managerRunning(name string) bool {
	_, ok := c.supervisor(name).Running(managerProcess)
	return ok
}

// StartManager starts the manager process of local cluster name, against that cluster's own API
// server, unless it already runs, and waits until it is ready. The process outlives the CLI.
func (c *Client) StartManager(ctx context.Context, name string) error {
	if !c.managerRunning(name) {
		ports, err := freePorts(3)
		if err != nil {
			return err
		}
		ep := managerEndpoints{
			Health:  net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])),
			Metrics: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1])),
			Webhook: ports[2],
		}
		data, err := json.Marshal(ep)
		if err != nil {
			return fmt.Errorf("encoding manager endpoints: %w", err)
		}
		if err := atomicfile.Write(c.managerEndpointsPath(name), data); err != nil {
			return err
		}
		spec := process.Spec{
			Name: managerProcess,
			Path: c.Executable,
			Args: []string{
				"manager",
				"--kubeconfig", c.localKubeconfigPath(name),
				"--home", c.Home,
				"--bin-dir", c.BinRoot,
				"--health-addr", ep.Health,
				"--metrics-addr", ep.Metrics,
				"--webhook-port", strconv.Itoa(ep.Webhook),
				"--webhook-cert-dir", filepath.Join(c.clusterDir(name), "manager", "certs"),
				// No leader election: the supervisor already runs one manager per cluster, and a
				// local manager that missed a lease renewal on a busy machine would exit with
				// nothing to restart it. (In a real cluster, replicas elect a leader.)
			},
		}
		if _, err := c.supervisor(name).Start(ctx, spec); err != nil {
			return fmt.Errorf("starting the manager of %s: %w", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var lastErr error
	err := wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if !c.managerRunning(name) {
			return false, fmt.Errorf("the manager of %s exited; its log:\n%s", name, c.supervisor(name).LogTail(managerProcess, 20))
		}
		lastErr = c.ManagerReady(ctx, name)
		return lastErr == nil, nil
	})
	if err != nil {
		if lastErr != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return fmt.Errorf("the manager of %s is not ready after 2m (%v); see %s", name, lastErr, c.supervisor(name).LogPath(managerProcess))
	}
	return nil
}

// ManagerReady returns nil when the manager of local cluster name answers its readiness probe.
func (c *Client) ManagerReady(ctx context.Context, name string) error {
	data, err := os.ReadFile(c.managerEndpointsPath(name))
	if err != nil {
		return fmt.Errorf("reading the manager's endpoints: %w", err)
	}
	var ep managerEndpoints
	if err := json.Unmarshal(data, &ep); err != nil {
		return fmt.Errorf("reading %s: %w", c.managerEndpointsPath(name), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ep.Health+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("manager readiness: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("manager readiness: %s", resp.Status)
	}
	return nil
}

// stopManager stops the manager process of local cluster name if it runs.
func (c *Client) stopManager(ctx context.Context, name string) error {
	if _, err := os.Stat(c.clusterDir(name)); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := c.supervisor(name).Stop(ctx, managerProcess, process.DefaultStopTimeout); err != nil {
		return fmt.Errorf("stopping the manager of %s: %w", name, err)
	}
	return nil
}

// freePorts returns n distinct free TCP ports on the loopback interface.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		port, err := controlplane.PickPort("127.0.0.1")
		if err != nil {
			return nil, err
		}
		ports = append(ports, int(port))
	}
	return ports, nil
}
