package manager

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
)

// Probes and metrics.
//
// The manager opens the listeners of its probes and of its metrics itself, in New, on the
// addresses of Options: by default 127.0.0.1 with a port the kernel picks, so that no other user
// of the machine can hold a port the manager needs (they were 9440 and 8080). ProbeAddress and
// MetricsAddress say where they listen; `flotilla manager --endpoints-file` records both for the
// CLI. controller-runtime binds its own servers only once it starts and does not tell where, so
// its probe and metrics servers stay off.
//
// Metrics are served over HTTPS, with the webhooks' serving certificate (made at start, in the
// webhook certificate directory, where clients on this machine find its CA), to clients the management cluster's API server authenticates (TokenReview) and
// authorizes to get the non-resource URL /metrics (SubjectAccessReview): controller-runtime's
// filters.WithAuthenticationAndAuthorization, as Cluster API's --diagnostics-address. Others get
// 401 or 403. The probes answer anyone, over HTTP: they say whether the manager is up and ready,
// nothing else.

// RBAC of the manager's own identity for the metrics endpoint's authentication and authorization.
//
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// Defaults of Options.
const (
	DefaultHealthProbeBindAddress = "127.0.0.1:0"
	DefaultMetricsBindAddress     = "127.0.0.1:0"
)

// servingShutdown bounds how long the probe and metrics servers wait for open requests at stop.
const servingShutdown = 5 * time.Second

// check is a named health or readiness check.
type check struct {
	name    string
	checker healthz.Checker
}

// listen opens a TCP listener on addr, or none when addr is "0".
func listen(addr, what string) (net.Listener, error) {
	if addr == "0" {
		return nil, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for %s on %s: %w; pass another address, or 0 to disable", what, addr, err)
	}
	return l, nil
}

// ProbeAddress is the host:port of the /healthz and /readyz probes, "" when disabled.
func (m *Manager) ProbeAddress() string { return addressOf(m.probeListener) }

// MetricsAddress is the host:port of the HTTPS /metrics endpoint, "" when disabled.
func (m *Manager) MetricsAddress() string { return addressOf(m.metricsListener) }

func addressOf(l net.Listener) string {
	if l == nil {
		return ""
	}
	return l.Addr().String()
}

// listenProbesAndMetrics opens the listeners of opts.
func (m *Manager) listenProbesAndMetrics(opts Options) error {
	var err error
	if m.probeListener, err = listen(orDefault(opts.HealthProbeBindAddress, DefaultHealthProbeBindAddress), "probes"); err != nil {
		return err
	}
	m.metricsListener, err = listen(orDefault(opts.MetricsBindAddress, DefaultMetricsBindAddress), "metrics")
	return err
}

// serveProbes adds to the manager a server of healthChecks at /healthz and readyChecks at
// /readyz, each check also at /<probe>/<name>, as controller-runtime's probe server.
func (m *Manager) serveProbes(healthChecks, readyChecks []check) error {
	if m.probeListener == nil {
		return nil
	}
	mux := http.NewServeMux()
	for path, checks := range map[string][]check{"/healthz": healthChecks, "/readyz": readyChecks} {
		handler := &healthz.Handler{Checks: map[string]healthz.Checker{}}
		for _, c := range checks {
			handler.Checks[c.name] = c.checker
		}
		mux.Handle(path, http.StripPrefix(path, handler))
		mux.Handle(path+"/", http.StripPrefix(path, handler))
	}
	return m.mgr.Add(serve(&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, m.probeListener))
}

// serveMetrics adds to the manager the HTTPS server of controller-runtime's metrics registry,
// with the webhook serving certificate (newWebhookServer wrote it), behind the API server's authentication and authorization of restConfig's cluster.
func (m *Manager) serveMetrics(ctx context.Context, restConfig *rest.Config) error {
	if m.metricsListener == nil {
		return nil
	}
	filter, err := filters.WithAuthenticationAndAuthorization(restConfig, m.mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("setting up the authorization of metrics: %w", err)
	}
	handler, err := filter(ctrl.LoggerFrom(ctx).WithName("metrics"), promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	if err != nil {
		return fmt.Errorf("setting up the authorization of metrics: %w", err)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(m.certDir, webhookCertName), filepath.Join(m.certDir, webhookKeyName))
	if err != nil {
		return fmt.Errorf("loading the metrics serving certificate: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", handler)
	listener := tls.NewListener(m.metricsListener, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	return m.mgr.Add(serve(&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, listener))
}

// serve is a runnable serving server on l until its context ends; it runs on every replica.
func serve(server *http.Server, l net.Listener) manager.Runnable {
	return serverRunnable{server: server, listener: l}
}

type serverRunnable struct {
	server   *http.Server
	listener net.Listener
}

func (serverRunnable) NeedLeaderElection() bool { return false }

func (s serverRunnable) Start(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- s.server.Serve(s.listener) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		shutdownCtx, cancel := context.WithTimeout(context.Background(), servingShutdown)
		defer cancel()
		if err := s.server.Shutdown(shutdownCtx); err != nil {
			return err
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
