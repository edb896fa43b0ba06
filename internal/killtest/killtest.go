package killtest

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/flotilla-dev/flotilla/pkg/scheme"
)

// roleEnv names the environment variable that makes the test binary a child.
const roleEnv = "FLOTILLA_KILLTEST_ROLE"

// Child reports whether this process is a child Start started.
func Child() bool { return os.Getenv(roleEnv) != "" }

// Process is a child process running a manager.
type Process struct {
	cmd    *exec.Cmd
	exited chan error
}

// Start starts the test binary as a child with settings in its environment (Setting reads
// them) and kubeconfigs (Config reads them), and kills it when the test ends.
func Start(t testing.TB, settings map[string]string, kubeconfigs map[string][]byte) *Process {
	t.Helper()
	cmd := exec.CommandContext(context.Background(), os.Args[0], "-test.run=^$") //nolint:gosec // the test binary starts itself
	cmd.Env = append(os.Environ(), roleEnv+"=child")
	for k, v := range settings {
		cmd.Env = append(cmd.Env, envName(k)+"="+v)
	}
	for k, v := range kubeconfigs {
		cmd.Env = append(cmd.Env, envName(k)+"="+base64.StdEncoding.EncodeToString(v))
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return p
}

// Kill kills the child with SIGKILL and waits until it is gone.
func (p *Process) Kill() error {
	if err := p.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("killing the manager process: %w", err)
	}
	if err := <-p.exited; err == nil {
		return errors.New("the manager process ended before it was killed")
	}
	return nil
}

func envName(key string) string { return roleEnv + "_" + strings.ToUpper(key) }

// Setting is the child's setting key.
func Setting(key string) string { return os.Getenv(envName(key)) }

// Config is the REST config of the child's kubeconfig key.
func Config(key string) (*rest.Config, error) {
	kubeconfig, err := base64.StdEncoding.DecodeString(os.Getenv(envName(key)))
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", key, err)
	}
	return clientcmd.RESTConfigFromKubeConfig(kubeconfig)
}

// HangWrites makes every request of cfg that writes to a path containing pathPart hang until
// its context ends (for a killed process: forever). Helm has recorded a release pending and
// applied the objects before when it hangs there.
func HangWrites(cfg *rest.Config, pathPart string) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return hanging{rt: rt, pathPart: pathPart}
	})
}

type hanging struct {
	rt       http.RoundTripper
	pathPart string
}

func (h hanging) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet && strings.Contains(req.URL.Path, h.pathPart) {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return h.rt.RoundTrip(req)
}

// Manager is the child's manager on the management cluster of the kubeconfig "mgmt" (watching
// namespace only, when not ""), and the config of its workload cluster, the kubeconfig
// "workload", whose writes of Deployments hang (HangWrites): Helm has recorded the release as
// pending and applied the objects before the Deployment when it stops there.
func Manager(namespace string) (ctrl.Manager, *rest.Config, error) {
	mgmt, err := Config("mgmt")
	if err != nil {
		return nil, nil, err
	}
	workload, err := Config("workload")
	if err != nil {
		return nil, nil, err
	}
	HangWrites(workload, "/deployments")
	s, err := scheme.New()
	if err != nil {
		return nil, nil, err
	}
	opts := ctrl.Options{Scheme: s, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	if namespace != "" {
		opts.Cache = ctrlcache.Options{DefaultNamespaces: map[string]ctrlcache.Config{namespace: {}}}
	}
	mgr, err := ctrl.NewManager(mgmt, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the manager: %w", err)
	}
	return mgr, workload, nil
}
