package inmemory

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	inmemoryserver "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server"
	inmemoryapi "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/server/api"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/pkg/pki"
)

// syncInterval is how often the gateway compares the endpoints it serves with the in-memory
// server's listeners.
const syncInterval = 100 * time.Millisecond

// gateway serves each workload cluster's endpoint, 127.0.0.1:PORT of the host, once the
// in-memory server has started its listener (when the first control plane machine's API server
// comes up), and stops serving it when the listener goes. It terminates TLS itself, with a
// serving certificate it signs with the cluster's CA (the <cluster>-ca Secret), and requires a
// client certificate signed by that CA: only holders of the cluster's kubeconfig get in. Requests
// go to the in-memory API server's handler (package server/api of Cluster API's in-memory
// provider), which resolves the cluster by the port the connection came in on. Port-forwards to etcd members dial 127.0.0.1:PORT of the
// process's own namespace, the in-memory server's listener, which serves etcd.
type gateway struct {
	mux    *inmemoryserver.WorkloadClustersMux
	reader ctrlclient.Reader
	host   *hostNetwork
	// x holds the extensions' state, which goes with a cluster (forgetCluster).
	x *extensions
	// handler serves every cluster; it finds the cluster by the request's Host, which
	// endpoint.serve sets to the endpoint's own address.
	handler http.Handler

	mu sync.Mutex
	// endpoints are the endpoints served, by listener name (namespace/name of the CAPI Cluster).
	endpoints map[string]*endpoint
	// listeners maps the ports served to their listener names.
	listeners map[string]string
}

// endpoint is one workload cluster's endpoint.
type endpoint struct {
	name, port string
	server     *http.Server
}

func newGateway(mux *inmemoryserver.WorkloadClustersMux, memory inmemoryruntime.Manager, reader ctrlclient.Reader, host *hostNetwork) *gateway {
	g := &gateway{mux: mux, reader: reader, host: host, endpoints: map[string]*endpoint{}, listeners: map[string]string{}}
	g.x = newExtensions(memory, g.resourceGroup, inmemoryapi.NewAPIServerHandler(memory, ctrl.Log.WithName("inmemory-apiserver"), g.resourceGroup))
	g.handler = g.x.handler()
	return g
}

// resourceGroup resolves the host:port a request came in on to the cluster's resource group in
// the in-memory store.
func (g *gateway) resourceGroup(hostPort string) (string, error) {
	_, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return "", err
	}
	g.mu.Lock()
	name, ok := g.listeners[port]
	g.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("no workload cluster is served on port %s", port)
	}
	return g.mux.ResourceGroupByWorkloadCluster(name)
}

// Start serves the endpoints until ctx ends.
func (g *gateway) Start(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("gateway")
	ticker := time.NewTicker(syncInterval)
	defer ticker.Stop()
	failing := map[string]string{}
	for {
		for name, err := range g.sync(ctx) {
			if failing[name] != err.Error() {
				log.Error(err, "Serving a workload cluster's endpoint failed; retrying", "cluster", name)
				failing[name] = err.Error()
			}
		}
		select {
		case <-ctx.Done():
			g.closeAll()
			return nil
		case <-ticker.C:
		}
	}
}

// sync serves the endpoints of the in-memory server's active listeners and stops serving the
// others. It returns the errors of the endpoints it could not serve, by listener name.
func (g *gateway) sync(ctx context.Context) map[string]error {
	wanted := map[string]string{}
	for name, address := range g.mux.ListListeners() {
		if strings.HasSuffix(address, "(stopped)") {
			continue
		}
		u, err := url.Parse(address)
		if err != nil {
			continue
		}
		wanted[name] = u.Port()
	}
	g.mu.Lock()
	var stale []*endpoint
	for name, ep := range g.endpoints {
		if wanted[name] != ep.port {
			stale = append(stale, ep)
			delete(g.endpoints, name)
			delete(g.listeners, ep.port)
		}
	}
	g.mu.Unlock()
	for _, ep := range stale {
		_ = ep.server.Close()
		if group, err := g.mux.ResourceGroupByWorkloadCluster(ep.name); err == nil {
			g.x.forgetApplied(group + "|")
		}
	}

	errs := map[string]error{}
	for name, port := range wanted {
		g.mu.Lock()
		_, served := g.endpoints[name]
		g.mu.Unlock()
		if served {
			continue
		}
		if err := g.serve(ctx, name, port); err != nil {
			errs[name] = err
		}
	}
	return errs
}

// serve starts serving the endpoint of the cluster of listener name on port.
func (g *gateway) serve(ctx context.Context, name, port string) error {
	tlsConfig, err := g.tlsConfig(ctx, name)
	if err != nil {
		return err
	}
	l, err := g.host.listen(net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return fmt.Errorf("listening on 127.0.0.1:%s: %w", port, err)
	}
	address := l.Addr().String()
	ep := &endpoint{name: name, port: port, server: &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
				unauthorized(w)
				return
			}
			// The cluster is the one of the endpoint the connection came in on, whatever the
			// request's Host says.
			r.Host = address
			g.handler.ServeHTTP(w, r)
		}),
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
	}}
	g.mu.Lock()
	g.endpoints[name] = ep
	g.listeners[port] = name
	g.mu.Unlock()
	go func() {
		if err := ep.server.ServeTLS(l, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			ctrl.LoggerFrom(ctx).Error(err, "Serving a workload cluster's endpoint stopped", "cluster", name)
		}
	}()
	ctrl.LoggerFrom(ctx).Info("Serving workload cluster endpoint", "cluster", name, "address", address)
	return nil
}

// tlsConfig is the TLS configuration of the endpoint of the cluster of listener name
// (namespace/cluster): a serving certificate for 127.0.0.1 and localhost signed by the
// cluster's CA, and client certificates required, signed by that CA.
func (g *gateway) tlsConfig(ctx context.Context, name string) (*tls.Config, error) {
	namespace, cluster, ok := strings.Cut(name, "/")
	if !ok {
		return nil, fmt.Errorf("listener %q is not namespace/name", name)
	}
	s := &corev1.Secret{}
	key := ctrlclient.ObjectKey{Namespace: namespace, Name: secret.Name(cluster, secret.ClusterCA)}
	if err := g.reader.Get(ctx, key, s); err != nil {
		return nil, fmt.Errorf("reading the CA of %s (Secret %s): %w", name, klog.KRef(key.Namespace, key.Name), err)
	}
	ca, err := pki.ParseKeyPair(s.Data[secret.TLSCrtDataName], s.Data[secret.TLSKeyDataName])
	if err != nil {
		return nil, fmt.Errorf("reading the CA of %s: %w", name, err)
	}
	serving, err := pki.NewServingCert(ca, "in-memory-apiserver", []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, fmt.Errorf("issuing the serving certificate of %s: %w", name, err)
	}
	cert, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading the serving certificate of %s: %w", name, err)
	}
	clients := x509.NewCertPool()
	clients.AddCert(ca.Cert)
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.VerifyClientCertIfGiven,
		ClientCAs:    clients,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// closeAll stops serving every endpoint.
func (g *gateway) closeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for name, ep := range g.endpoints {
		_ = ep.server.Close()
		delete(g.endpoints, name)
		delete(g.listeners, ep.port)
	}
}

// unauthorized answers a request without a client certificate as kube-apiserver answers an
// anonymous request when anonymous access is off.
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}` + "\n"))
}
