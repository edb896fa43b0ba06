package client

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	. "github.com/onsi/gomega"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/internal/gittest"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

func TestTheManagerProcessCarriesTheManagementClustersProxy(t *testing.T) {
	g := NewWithT(t)
	c := &Client{Executable: "/flotilla", Home: "/home"}
	spec := c.managerSpec("mgmt", managerEndpoints{}, &flotillav1.ProxyConfiguration{
		HTTPProxy: "http://proxy:3128", HTTPSProxy: "http://proxy:3129", NoProxy: []string{".internal", "10.0.0.0/8"}})
	g.Expect(spec.Env).To(Equal([]string{"HTTP_PROXY=http://proxy:3128", "HTTPS_PROXY=http://proxy:3129",
		"NO_PROXY=localhost,127.0.0.1,::1,.internal,10.0.0.0/8"}))
	g.Expect(c.managerSpec("mgmt", managerEndpoints{}, nil).Env).To(BeEmpty())
}

// proxyChildEnv marks the process TestTheManagersFetchesGoThroughItsProxy starts as the manager.
const proxyChildEnv = "FLOTILLA_TEST_PROXY_CHILD"

// A process with the manager's proxy environment (proxyEnv) makes its registry pull (HTTPS,
// through a CONNECT tunnel), chart repository fetch and Git fetch (HTTP) through the proxy: their
// hosts do not resolve, only the proxy knows where they are. Go reads the proxy environment once
// per process, so the fetches run in a process of their own, as the manager's do.
func TestTheManagersFetchesGoThroughItsProxy(t *testing.T) {
	if os.Getenv(proxyChildEnv) != "" {
		fetchAsTheManager(t)
		return
	}
	g := NewWithT(t)
	reg, err := charttest.StartSecureRegistry()
	g.Expect(err).NotTo(HaveOccurred())
	defer reg.Close()
	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	s, err := bundle.Sign(bundle.Bundle{Name: "v1-36-1", KubernetesMinor: "1.36", Build: 1, Packages: []bundle.Package{}}, key)
	g.Expect(err).NotTo(HaveOccurred())
	opts, err := bundle.RemoteOptions(registryconn.Config{Username: reg.Username, Password: reg.Password, CAData: reg.CAPEM})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Push(context.Background(), reg.Host+"/flotilla", s, opts...)).To(Succeed())
	charts := strings.TrimPrefix(charttest.Repository{Charts: []charttest.Chart{charttest.Hello("0.1.0")}}.Serve(t), "http://")
	gitDir := t.TempDir()
	_, err = git.PlainInit(gitDir, true)
	g.Expect(err).NotTo(HaveOccurred())
	gitURL, err := url.Parse(gittest.Serve(t, gitDir))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = gitopsrepo.Repository{URL: gitDir}.PutCluster(context.Background(), "mgmt", "w1", []byte("kind: Cluster\n"))
	g.Expect(err).NotTo(HaveOccurred())

	// The registry's test certificate names example.com: the tunnel to it verifies.
	proxy := &recordingProxy{routes: map[string]string{"example.com:443": reg.Host, "charts.flotilla.test:80": charts, "git.flotilla.test:80": gitURL.Host}}
	srv := httptest.NewServer(proxy)
	defer srv.Close()

	exe, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command(exe, "-test.run", "^TestTheManagersFetchesGoThroughItsProxy$", "-test.v") //nolint:gosec // this test binary
	cmd.Env = append(proxyEnv(&flotillav1.ProxyConfiguration{HTTPProxy: srv.URL, HTTPSProxy: srv.URL}),
		"PATH="+os.Getenv("PATH"), "HOME="+t.TempDir(), proxyChildEnv+"=1",
		"REGISTRY_USER="+reg.Username, "REGISTRY_PASSWORD="+reg.Password, "REGISTRY_CA="+string(reg.CAPEM), "GIT_PATH="+gitURL.Path)
	out, err := cmd.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(proxy.seen()).To(ContainElements("example.com:443", "charts.flotilla.test:80", "git.flotilla.test:80"))
}

// fetchAsTheManager pulls as the manager does, from hosts only the proxy reaches.
func fetchAsTheManager(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	opts, err := bundle.RemoteOptions(registryconn.Config{Username: os.Getenv("REGISTRY_USER"), Password: os.Getenv("REGISTRY_PASSWORD"), CAData: []byte(os.Getenv("REGISTRY_CA"))})
	g.Expect(err).NotTo(HaveOccurred())
	names, err := bundle.List(ctx, "example.com", "flotilla", "1.36", opts...)
	g.Expect(err).NotTo(HaveOccurred(), "the registry pull")
	g.Expect(names).To(Equal([]string{"v1-36-1"}))

	e := &helm.Engine{ChartCache: t.TempDir()}
	_, info, err := e.Template(ctx, helm.Release{Name: "hello", Namespace: "default", Chart: helm.ChartRef{RepoURL: "http://charts.flotilla.test", Name: "hello", Version: "0.1.0"}})
	g.Expect(err).NotTo(HaveOccurred(), "the chart fetch")
	g.Expect(info.Version).To(Equal("0.1.0"))

	snap, err := gitopsrepo.Repository{URL: "http://git.flotilla.test" + os.Getenv("GIT_PATH")}.Pull(ctx, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred(), "the Git fetch")
	g.Expect(snap.Commit()).NotTo(BeEmpty())
}

// recordingProxy is an HTTP proxy that records the hosts asked for and reaches them at the
// loopback addresses of routes: CONNECT tunnels and absolute-form requests.
type recordingProxy struct {
	mu     sync.Mutex
	hosts  []string
	routes map[string]string
}

func (p *recordingProxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.hosts...)
}

func (p *recordingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if r.Method != http.MethodConnect && r.URL.Port() == "" {
		host = r.URL.Hostname() + ":80"
	}
	p.mu.Lock()
	p.hosts = append(p.hosts, host)
	p.mu.Unlock()
	backend, ok := p.routes[host]
	if !ok {
		http.Error(w, "no route to "+host, http.StatusBadGateway)
		return
	}
	if r.Method != http.MethodConnect {
		(&httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", backend
		}}).ServeHTTP(w, r)
		return
	}
	upstream, err := net.Dial("tcp", backend)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		_ = upstream.Close()
		return
	}
	_, _ = conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	go func() { _, _ = io.Copy(upstream, conn); _ = upstream.Close() }()
	_, _ = io.Copy(conn, upstream)
	_ = conn.Close()
}
