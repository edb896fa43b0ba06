package ociregistry

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"

	"github.com/flotilla-dev/flotilla/pkg/netaddr"
)

// maxManifestSize bounds the body of a manifest PUT. The distribution spec asks registries to
// accept at least 4 MiB.
const maxManifestSize = 4 << 20

// Defaults of Options.
const (
	// DefaultMaxBlobSize bounds a blob: charts and bundles are kilobytes, the container images
	// of a local node's system pods tens of megabytes.
	DefaultMaxBlobSize int64 = 512 << 20
	// DefaultUploadTimeout is how long an upload may see no request before it expires.
	DefaultUploadTimeout = 10 * time.Minute
	// DefaultMaxUploads bounds the uploads in progress at once.
	DefaultMaxUploads = 32
)

// Options configure Serve and NewHandler. The fields are the flags of `flotilla registry
// serve`, whose names the errors use.
type Options struct {
	// Listen is the address to serve on, such as 127.0.0.1:5001. Off loopback, TLS is
	// required too, and AnonymousPull is refused.
	Listen string
	// Dir keeps blobs and manifests. It is created (0700) when missing.
	Dir string
	// TLSCertFile and TLSKeyFile, when both set, make the registry serve HTTPS with that
	// certificate; otherwise it serves plain HTTP.
	TLSCertFile, TLSKeyFile string
	// HTPasswdFile holds the users (user:bcrypt-hash lines, see ParseHTPasswd), and every
	// request must authenticate as one of them with HTTP basic auth, reads too unless
	// AnonymousPull. Serve requires it: the registry authenticates every write. A handler
	// without it (NewHandler, for tests that serve it in their own process) takes writes from
	// loopback clients without credentials.
	HTPasswdFile string
	// AnonymousPull lets requests without credentials read (GET and HEAD); writes still
	// authenticate. Real nodes pull so from the default setup's registry.
	AnonymousPull bool
	// PullOnlyUsers are users of HTPasswdFile who may pull and nothing more, such as the user
	// whose credentials a management cluster's mirror gives every real node.
	PullOnlyUsers []string
	// MaxBlobSize bounds each blob, pushed in one request or in chunks (DefaultMaxBlobSize when 0).
	MaxBlobSize int64
	// UploadTimeout is how long an unfinished upload may see no request before it is deleted,
	// and how long a request body may stall (DefaultUploadTimeout when 0).
	UploadTimeout time.Duration
	// MaxUploads bounds the uploads in progress at once (DefaultMaxUploads when 0).
	MaxUploads int
	// Log receives one line per request; nil discards them. Credentials are never logged.
	Log io.Writer
	// Now is the clock of upload expiry and of the credentials cache; time.Now when nil.
	Now func() time.Time
}

// withDefaults fills in the defaults.
func (o Options) withDefaults() Options {
	if o.MaxBlobSize == 0 {
		o.MaxBlobSize = DefaultMaxBlobSize
	}
	if o.UploadTimeout == 0 {
		o.UploadTimeout = DefaultUploadTimeout
	}
	if o.MaxUploads == 0 {
		o.MaxUploads = DefaultMaxUploads
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// Validate checks the options of Serve: a registry authenticates every write, and one off
// loopback (reachable from other machines) serves TLS and authenticates every request.
func (o Options) Validate() error {
	var errs []error
	if o.Listen == "" {
		errs = append(errs, errors.New("--listen is required, such as 127.0.0.1:5001"))
	}
	if o.Dir == "" {
		errs = append(errs, errors.New("--dir is required"))
	}
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		errs = append(errs, errors.New("--tls-cert-file and --tls-key-file go together"))
	}
	errs = append(errs, o.checkLimits())
	switch {
	case o.Listen != "" && !netaddr.IsLoopback(o.Listen):
		var missing []string
		if o.TLSCertFile == "" || o.TLSKeyFile == "" {
			missing = append(missing, "TLS (--tls-cert-file and --tls-key-file: a certificate for the names clients use)")
		}
		if o.HTPasswdFile == "" {
			missing = append(missing, "authentication (--htpasswd FILE of user:bcrypt-hash lines; add users with 'flotilla registry htpasswd USER --file FILE')")
		}
		if len(missing) > 0 {
			errs = append(errs, fmt.Errorf("--listen %s is not a loopback address, so other machines could reach the registry: add %s, or listen on 127.0.0.1",
				o.Listen, strings.Join(missing, " and ")))
		}
		if o.AnonymousPull {
			errs = append(errs, fmt.Errorf("--anonymous-pull is for a registry on loopback (real nodes pull through their gateway's forward): --listen %s reaches other machines, whose clients authenticate", o.Listen))
		}
	case o.HTPasswdFile == "":
		errs = append(errs, errors.New("--htpasswd is required: the registry authenticates every push and delete ('flotilla registry serve' and 'start' on loopback use the push credential of $FLOTILLA_HOME/registry when --htpasswd is not given)"))
	}
	return errors.Join(errs...)
}

// checkLimits refuses negative limits.
func (o Options) checkLimits() error {
	if o.MaxBlobSize < 0 || o.UploadTimeout < 0 || o.MaxUploads < 0 {
		return errors.New("--max-blob-size, --upload-timeout and --max-uploads are positive (0 takes the default)")
	}
	return nil
}

// Serve serves the registry on opts.Listen until ctx is cancelled, then shuts down gracefully
// (in-flight requests get 5 s, then their connections are closed). It holds a lock on opts.Dir while it runs: a second registry
// on the same directory fails instead of overwriting the first one's records.
func Serve(ctx context.Context, opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	opts = opts.withDefaults()
	unlock, err := lockDir(opts.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	h, err := newHandler(opts)
	if err != nil {
		return err
	}
	var tlsCert tls.Certificate
	if opts.TLSCertFile != "" {
		if tlsCert, err = tls.LoadX509KeyPair(opts.TLSCertFile, opts.TLSKeyFile); err != nil {
			return fmt.Errorf("loading --tls-cert-file and --tls-key-file: %w", err)
		}
	}
	l, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", opts.Listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	if opts.TLSCertFile != "" {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{tlsCert}}
		l = tls.NewListener(l, srv.TLSConfig)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	// Abandoned uploads expire even when no request comes to notice them.
	ticker := time.NewTicker(max(min(opts.UploadTimeout/2, time.Minute), time.Second))
	defer ticker.Stop()
serving:
	for {
		select {
		case err := <-done:
			return fmt.Errorf("serving the registry on %s: %w", opts.Listen, err)
		case <-ticker.C:
			h.uploads.sweep()
		case <-ctx.Done():
			break serving
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// Requests still running after 5 s are cut, and so are connections that never sent one
		// (http.Server waits 5 s before it counts those as idle; clients keep such spares).
		if err := srv.Close(); err != nil {
			return fmt.Errorf("shutting down the registry: %w", err)
		}
	}
	return nil
}

// lockDir takes an exclusive, non-blocking flock on <dir>/.lock.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	path := filepath.Join(dir, ".lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil { //nolint:gosec // fd fits an int
		_ = f.Close()
		return nil, fmt.Errorf("another registry already serves %s (lock %s: %w)", dir, path, err)
	}
	return func() { _ = f.Close() }, nil
}

// NewHandler returns the registry's HTTP handler (to be served at the site root) over the data in
// opts.Dir, with the manifests recorded there already loaded, and opts' authentication and
// limits. opts.Listen and the TLS files are not its business (tests serve the handler on
// httptest servers). Only one handler may use a directory at a time.
func NewHandler(opts Options) (http.Handler, error) {
	if opts.Dir == "" {
		return nil, errors.New("ociregistry: Dir is required")
	}
	if err := opts.checkLimits(); err != nil {
		return nil, err
	}
	return newHandler(opts.withDefaults())
}

// newHandler is NewHandler for options with their defaults.
func newHandler(opts Options) (*handler, error) {
	st, err := openStore(opts.Dir)
	if err != nil {
		return nil, err
	}
	blobs := &diskBlobs{dir: filepath.Join(opts.Dir, "blobs")}
	up, err := newUploads(filepath.Join(opts.Dir, "uploads"), blobs, opts)
	if err != nil {
		return nil, err
	}
	h := &handler{store: st, uploads: up, log: log.New(opts.Log, "", log.LstdFlags), now: opts.Now, stallTimeout: opts.UploadTimeout, anonymousPull: opts.AnonymousPull}
	if opts.HTPasswdFile != "" {
		if h.auth, err = newAuthenticator(opts.HTPasswdFile, opts.Now); err != nil {
			return nil, err
		}
	}
	h.pullOnly = map[string]bool{}
	for _, u := range opts.PullOnlyUsers {
		if h.auth == nil || h.auth.users[u] == nil {
			return nil, fmt.Errorf("--pull-only-users: %q is not a user of the htpasswd file %q: add it with 'flotilla registry htpasswd %s --file %s'", u, opts.HTPasswdFile, u, opts.HTPasswdFile)
		}
		h.pullOnly[u] = true
	}
	// go-containerregistry serves what this handler forwards (reads, manifest writes, blob
	// deletes) and never sees a blob upload; this handler logs every request itself.
	h.inner = ggcrregistry.New(
		ggcrregistry.WithBlobHandler(blobs),
		ggcrregistry.Logger(log.New(io.Discard, "", 0)),
		ggcrregistry.WithReferrersSupport(true),
	)
	if err := st.replay(h.inner); err != nil {
		return nil, err
	}
	return h, nil
}

// handler authenticates requests, checks their paths, serves blob uploads itself, and records
// manifest writes and deletes on disk around go-containerregistry's handler, which serves the
// rest.
type handler struct {
	inner   http.Handler
	store   *store
	uploads *uploads
	// auth is nil when the registry does not authenticate.
	auth *authenticator
	// pullOnly are the users who may only pull (Options.PullOnlyUsers).
	pullOnly map[string]bool
	// anonymousPull lets requests without credentials read (Options.AnonymousPull).
	anonymousPull bool
	log           *log.Logger
	now           func() time.Time
	// stallTimeout bounds how long reading a request body may make no progress.
	stallTimeout time.Duration
}

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	start := h.now()
	sw := &statusWriter{ResponseWriter: w}
	user := "-"
	defer func() {
		// The request line and the user name, never the Authorization header.
		h.log.Printf("%s %s %d user=%s %s", req.Method, req.URL.RequestURI(), sw.status, user, h.now().Sub(start).Round(time.Millisecond))
	}()
	sw.Header().Set("Docker-Distribution-API-Version", "registry/2.0")
	var name string
	_, _, sent := req.BasicAuth()
	switch {
	case h.auth == nil:
	case !sent && h.anonymousPull && isRead(req):
		user = "anonymous"
	case !sent && h.anonymousPull:
		challenge(sw, "pushing and deleting need credentials, anonymous clients may only pull: log in as a user of the registry (for Flotilla's embedded registry, the push credential in $FLOTILLA_HOME/registry/push-credentials, which the flotilla CLI uses itself)")
		return
	default:
		var ok bool
		name, ok = h.auth.allow(req)
		if !ok {
			if name != "" {
				user = strconv.Quote(name) + "(refused)"
			}
			challenge(sw, "authentication required: log in with the registry's user name and password")
			return
		}
		user = strconv.Quote(name)
	}
	if err := h.mayWrite(req, name); err != nil {
		writeError(sw, http.StatusForbidden, "DENIED", err.Error())
		return
	}
	r, err := parseRoute(req.URL.Path)
	if err == nil {
		err = checkParams(r, req)
	}
	if err != nil {
		writeRouteError(sw, err)
		return
	}
	if req.Body != nil {
		req.Body = &stallGuard{body: req.Body, rc: http.NewResponseController(w), timeout: h.stallTimeout}
	}
	switch {
	case r.kind == routeUploads || r.kind == routeUpload:
		h.uploads.serve(sw, req, r)
	case r.kind == routeManifest && req.Method == http.MethodPut:
		h.putManifest(sw, req, r)
	case r.kind == routeBlob && req.Method == http.MethodDelete:
		h.deleteBlob(sw, req, r)
	case r.kind == routeManifest && req.Method == http.MethodDelete:
		h.recordThenServe(sw, req, http.StatusAccepted, func() (func() error, error) { return h.store.deleteRef(r.repo, r.ref) })
	default:
		h.inner.ServeHTTP(sw, req)
	}
}

// mayWrite refuses a request that writes (any method but GET and HEAD) from a user who may
// only pull (Options.PullOnlyUsers), or, to a registry that does not authenticate, from
// anywhere but this machine's loopback: such a registry trusts the machine's users, and what
// reaches it from elsewhere arrives through a forward (real nodes pull from their cluster's
// gateway, which forwards to loopback), on behalf of a cluster's tenant, who may pull and
// nothing more. user is the authenticated user ("" when the registry does not authenticate).
func (h *handler) mayWrite(req *http.Request, user string) error {
	switch {
	case isRead(req):
		return nil
	case h.auth != nil:
		if h.pullOnly[user] {
			return fmt.Errorf("user %q may only pull (--pull-only-users)", user)
		}
		return nil
	}
	from, err := netip.ParseAddrPort(req.RemoteAddr)
	if err == nil && from.Addr().Unmap().IsLoopback() {
		return nil
	}
	return fmt.Errorf("this registry does not authenticate, so only clients on its machine's loopback may push or delete; %s may only pull", req.RemoteAddr)
}

// isRead says whether req only reads: GET and HEAD.
func isRead(req *http.Request) bool {
	return req.Method == http.MethodGet || req.Method == http.MethodHead
}

// deleteBlob deletes a blob: 202, or 404 when there is none (go-containerregistry answers 500).
func (h *handler) deleteBlob(w http.ResponseWriter, req *http.Request, r route) {
	digest, err := parseDigest(r.ref)
	if err == nil {
		err = h.uploads.blobs.Delete(req.Context(), r.repo, digest)
	}
	switch {
	case errors.Is(err, ggcrregistry.ErrNotFound):
		writeError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob "+r.ref+" is unknown")
	case err != nil:
		writeError(w, http.StatusInternalServerError, "UNKNOWN", "deleting the blob: "+err.Error())
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// putManifest checks a manifest's size and, when it is pushed by digest, that it has that
// digest, then records and serves it.
func (h *handler) putManifest(w http.ResponseWriter, req *http.Request, r route) {
	body, err := io.ReadAll(io.LimitReader(req.Body, maxManifestSize+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "MANIFEST_INVALID", "reading the manifest: "+err.Error())
		return
	}
	if len(body) > maxManifestSize {
		writeError(w, http.StatusRequestEntityTooLarge, "SIZE_INVALID", "manifest larger than 4 MiB")
		return
	}
	if isDigest(r.ref) {
		sum := sha256.Sum256(body)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != r.ref {
			writeError(w, http.StatusBadRequest, "DIGEST_INVALID", (&digestError{want: r.ref, got: got}).Error())
			return
		}
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	mediaType := req.Header.Get("Content-Type")
	h.recordThenServe(w, req, http.StatusCreated, func() (func() error, error) {
		return h.store.putManifest(r.repo, r.ref, mediaType, body)
	})
}

// recordThenServe records a manifest write on disk first, then hands it to go-containerregistry;
// when that does not answer want the record is rolled back. Writes are serialised, so a
// rollback never undoes another request's change.
func (h *handler) recordThenServe(w http.ResponseWriter, req *http.Request, want int, change func() (undo func() error, err error)) {
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	undo, err := change()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "UNKNOWN", "recording the manifest on disk: "+err.Error())
		return
	}
	sw := &statusWriter{ResponseWriter: w}
	h.inner.ServeHTTP(sw, req)
	if sw.status != want {
		if err := undo(); err != nil {
			h.log.Printf("rolling back the record of %s %s after go-containerregistry answered %d: %v", req.Method, req.URL.Path, sw.status, err)
		}
	}
}

// stallGuard fails a request body that makes no progress for timeout: a client that stops
// sending in the middle of an upload does not hold it (and a connection) forever.
type stallGuard struct {
	body    io.ReadCloser
	rc      *http.ResponseController
	timeout time.Duration
}

func (g *stallGuard) Read(p []byte) (int, error) {
	// Servers that cannot set deadlines (httptest's recorder) are left as they are.
	_ = g.rc.SetReadDeadline(time.Now().Add(g.timeout))
	return g.body.Read(p)
}

func (g *stallGuard) Close() error { return g.body.Close() }

// statusWriter remembers the status of the response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// writeError writes an error in the distribution spec's format.
func writeError(w http.ResponseWriter, status int, code, message string) {
	type apiError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	body, _ := json.Marshal(struct {
		Errors []apiError `json:"errors"`
	}{Errors: []apiError{{Code: code, Message: message}}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// replayRequest sends a recorded manifest into the in-memory registry.
func replayRequest(inner http.Handler, repo, target, mediaType string, body []byte) error {
	req := httptest.NewRequest(http.MethodPut, "/v2/"+repo+"/manifests/"+target, bytes.NewReader(body))
	req.Header.Set("Content-Type", mediaType)
	rec := httptest.NewRecorder()
	inner.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		return fmt.Errorf("restoring manifest %s:%s: %d %s", repo, target, rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	return nil
}
