package ociregistry

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// maxManifestSize bounds the body of a manifest PUT. The distribution spec asks registries to
// accept at least 4 MiB.
const maxManifestSize = 4 << 20

// Options configure Serve.
type Options struct {
	// Listen is the address to serve on, such as 127.0.0.1:5001.
	Listen string
	// Dir keeps blobs and manifests. It is created (0700) when missing.
	Dir string
	// TLSCertFile and TLSKeyFile, when both set, make the registry serve HTTPS with that
	// certificate; otherwise it serves plain HTTP.
	TLSCertFile, TLSKeyFile string
	// Log receives one line per request; nil discards them.
	Log io.Writer
}

// Serve serves the registry on opts.Listen until ctx is cancelled, then shuts down gracefully
// (in-flight requests get 5 s). It holds a lock on opts.Dir while it runs: a second registry
// on the same directory fails instead of overwriting the first one's records.
func Serve(ctx context.Context, opts Options) error {
	if opts.Listen == "" || opts.Dir == "" {
		return errors.New("ociregistry: Listen and Dir are required")
	}
	unlock, err := lockDir(opts.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	h, err := NewHandler(opts.Dir, opts.Log)
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", opts.Listen, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second}
	if opts.TLSCertFile != "" && opts.TLSKeyFile != "" {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	done := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			done <- srv.ServeTLS(l, opts.TLSCertFile, opts.TLSKeyFile)
			return
		}
		done <- srv.Serve(l)
	}()
	select {
	case err := <-done:
		return fmt.Errorf("serving the registry on %s: %w", opts.Listen, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down the registry: %w", err)
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
// dir, with the manifests recorded there already loaded. log receives one line per request; nil
// discards them. Only one handler may use a directory at a time.
func NewHandler(dir string, logTo io.Writer) (http.Handler, error) {
	if logTo == nil {
		logTo = io.Discard
	}
	st, err := openStore(dir)
	if err != nil {
		return nil, err
	}
	logger := log.New(logTo, "", log.LstdFlags)
	inner := registry.New(
		registry.WithBlobHandler(&diskBlobs{dir: filepath.Join(dir, "blobs")}),
		registry.Logger(logger),
		registry.WithReferrersSupport(true),
	)
	if err := st.replay(inner); err != nil {
		return nil, err
	}
	return &handler{inner: inner, store: st, log: logger}, nil
}

// handler records manifest writes and deletes on disk around go-containerregistry's handler.
type handler struct {
	inner http.Handler
	store *store
	log   *log.Logger
}

func (h *handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	repo, target, ok := manifestPath(req.URL.Path)
	if !ok || (req.Method != http.MethodPut && req.Method != http.MethodDelete) {
		h.inner.ServeHTTP(w, req)
		return
	}
	var change func() (undo func() error, err error)
	want := http.StatusAccepted
	if req.Method == http.MethodPut {
		body, err := io.ReadAll(io.LimitReader(req.Body, maxManifestSize+1))
		if err != nil {
			writeError(w, http.StatusBadRequest, "MANIFEST_INVALID", "reading the manifest: "+err.Error())
			return
		}
		if len(body) > maxManifestSize {
			writeError(w, http.StatusRequestEntityTooLarge, "SIZE_INVALID", "manifest larger than 4 MiB")
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		mediaType := req.Header.Get("Content-Type")
		change = func() (func() error, error) { return h.store.putManifest(repo, target, mediaType, body) }
		want = http.StatusCreated
	} else {
		change = func() (func() error, error) { return h.store.deleteRef(repo, target) }
	}
	// Manifest writes are recorded on disk first, then handed to go-containerregistry; when it
	// refuses them the record is rolled back. Writes are serialised, so a rollback never undoes
	// another request's change.
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
			h.log.Printf("rolling back the record of %s %s:%s after go-containerregistry answered %d: %v", req.Method, repo, target, sw.status, err)
		}
	}
}

// manifestPath parses /v2/<repo>/manifests/<reference> as go-containerregistry does.
func manifestPath(path string) (repo, target string, ok bool) {
	elem := strings.Split(path, "/")[1:]
	if len(elem) < 4 || elem[len(elem)-2] != "manifests" {
		return "", "", false
	}
	return strings.Join(elem[1:len(elem)-2], "/"), elem[len(elem)-1], true
}

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
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"errors":[{"code":%q,"message":%q}]}`, code, message)
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
