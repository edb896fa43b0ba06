package gittest

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/http/cgi" //nolint:gosec // httpoxy (G504) concerns Go before 1.6.3; this serves tests on loopback
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Option configures Serve.
type Option func(http.Handler) http.Handler

// BasicAuth makes Serve refuse requests without these basic credentials.
func BasicAuth(username, password string) Option {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(username)) != 1 ||
				subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// Serve serves the bare repository at dir over Git's smart HTTP protocol, fetch and push, on a
// loopback address, and returns its URL (http://127.0.0.1:PORT/repo.git).
func Serve(t testing.TB, dir string, opts ...Option) string {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("serving a Git repository needs git on the PATH: %v", err)
	}
	out, err := exec.Command(git, "--exec-path").Output()
	if err != nil {
		t.Fatalf("finding git's exec path: %v", err)
	}
	backend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	// The backend serves <root>/<path>: the repository is linked into a root of its own.
	root := t.TempDir()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(abs, filepath.Join(root, "repo.git")); err != nil {
		t.Fatal(err)
	}
	var h http.Handler = &cgi.Handler{
		Path: backend,
		Env: []string{
			"GIT_PROJECT_ROOT=" + root,
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true",
		},
	}
	for _, o := range opts {
		h = o(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/repo.git"
}

// HungServer accepts connections and never answers.
type HungServer struct {
	// URL is a repository URL on the server.
	URL string
	// Accepted receives a value for each connection accepted (it holds the first 16; later
	// ones are not announced).
	Accepted chan struct{}
}

// Hung starts a HungServer on a loopback address; it closes its connections when the test ends.
func Hung(t testing.TB) *HungServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &HungServer{URL: "http://" + l.Addr().String() + "/repo.git", Accepted: make(chan struct{}, 16)}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			select {
			case s.Accepted <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return s
}
