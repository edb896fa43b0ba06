package ociregistry

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// uploads are the blob uploads in progress, each a file under dir, with the running SHA-256 of
// what it holds in memory. They replace go-containerregistry's, which it keeps in memory with
// no bound and never forgets.
type uploads struct {
	dir   string
	blobs *diskBlobs
	// maxBlob bounds each blob, maxUploads the uploads in progress, and an upload that sees no
	// request for timeout expires.
	maxBlob    int64
	maxUploads int
	timeout    time.Duration
	now        func() time.Time

	mu sync.Mutex
	m  map[string]*upload
}

// upload is one upload in progress.
type upload struct {
	id, repo string
	size     int64
	sum      hash.Hash
	touched  time.Time
	// busy is true while a request writes to the upload; it does not expire then, and other
	// requests for it are refused.
	busy bool
}

// errUploadUnknown is an upload that does not exist (any more), or belongs to another repository.
var errUploadUnknown = errors.New("upload unknown")

// tooLargeError is a blob over the size limit.
type tooLargeError struct{ limit int64 }

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("the blob is larger than the registry's limit of %d bytes (--max-blob-size)", e.limit)
}

// newUploads opens the uploads directory under dir, deleting what an earlier run left: uploads
// do not survive a restart.
func newUploads(dir string, blobs *diskBlobs, opts Options) (*uploads, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("clearing old uploads: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	return &uploads{
		dir: dir, blobs: blobs,
		maxBlob: opts.MaxBlobSize, maxUploads: opts.MaxUploads, timeout: opts.UploadTimeout, now: opts.Now,
		m: map[string]*upload{},
	}, nil
}

func (u *uploads) path(id string) string { return filepath.Join(u.dir, id) }

// expire deletes the uploads that no request touched for the timeout. The caller holds u.mu.
func (u *uploads) expire() {
	now := u.now()
	for id, up := range u.m {
		if !up.busy && now.Sub(up.touched) >= u.timeout {
			delete(u.m, id)
			_ = os.Remove(u.path(id))
		}
	}
}

// sweep deletes abandoned uploads; Serve calls it periodically.
func (u *uploads) sweep() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expire()
}

// start begins an upload into repo, marked busy for the caller, who releases it.
func (u *uploads) start(repo string) (*upload, error) {
	id, err := newUploadID()
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(u.path(id), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the upload: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("creating the upload: %w", err)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expire()
	if len(u.m) >= u.maxUploads {
		_ = os.Remove(u.path(id))
		return nil, &tooManyUploadsError{limit: u.maxUploads, timeout: u.timeout}
	}
	up := &upload{id: id, repo: repo, sum: sha256.New(), touched: u.now(), busy: true}
	u.m[id] = up
	return up, nil
}

// tooManyUploadsError is the limit on uploads in progress reached.
type tooManyUploadsError struct {
	limit   int
	timeout time.Duration
}

func (e *tooManyUploadsError) Error() string {
	return fmt.Sprintf("%d uploads are in progress, the registry's limit (--max-uploads): finish or cancel one, or wait; an upload untouched for %s expires", e.limit, e.timeout)
}

// acquire returns upload id of repo, marked busy for the caller, who releases it.
func (u *uploads) acquire(repo, id string) (*upload, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.expire()
	up, ok := u.m[id]
	if !ok || up.repo != repo {
		return nil, errUploadUnknown
	}
	if up.busy {
		return nil, errors.New("another request is writing to this upload")
	}
	up.busy = true
	return up, nil
}

// release ends a request's use of up.
func (u *uploads) release(up *upload) {
	u.mu.Lock()
	defer u.mu.Unlock()
	up.busy = false
	up.touched = u.now()
}

// drop deletes up: cancelled, completed, broken or over the limit.
func (u *uploads) drop(up *upload) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m, up.id)
	_ = os.Remove(u.path(up.id))
}

// appendBody appends r to the busy upload up. Any error leaves the upload broken, so it is
// dropped.
func (u *uploads) appendBody(up *upload, r io.Reader) (err error) {
	defer func() {
		if err != nil {
			u.drop(up)
		}
	}()
	f, err := os.OpenFile(u.path(up.id), os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("opening the upload: %w", err)
	}
	body := &readErrorReader{r: r}
	n, copyErr := io.Copy(io.MultiWriter(f, up.sum), io.LimitReader(body, u.maxBlob-up.size+1))
	closeErr := f.Close()
	up.size += n
	switch {
	case body.err != nil:
		return &bodyError{err: body.err}
	case copyErr != nil:
		return fmt.Errorf("writing the upload: %w", copyErr)
	case closeErr != nil:
		return fmt.Errorf("writing the upload: %w", closeErr)
	case up.size > u.maxBlob:
		return &tooLargeError{limit: u.maxBlob}
	}
	return nil
}

// readErrorReader remembers the error of reading the request body, to tell it from an error
// writing the upload.
type readErrorReader struct {
	r   io.Reader
	err error
}

func (r *readErrorReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}

// bodyError is a request body that could not be read to its end.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "reading the request body: " + e.err.Error() }

// commit checks the busy upload's content against digest and moves it into the blob store.
// Either way the upload is gone afterwards.
func (u *uploads) commit(up *upload, digest v1.Hash) error {
	defer u.drop(up)
	if got := "sha256:" + hex.EncodeToString(up.sum.Sum(nil)); got != digest.String() {
		return &digestError{want: digest.String(), got: got}
	}
	return u.blobs.commit(digest, u.path(up.id))
}

// digestError is content whose digest is not the one it was pushed by.
type digestError struct{ want, got string }

func (e *digestError) Error() string {
	return fmt.Sprintf("the content's digest is %s, not %s", e.got, e.want)
}

// newUploadID is 128 random bits in hex: an upload's id is as good as a capability to it.
func newUploadID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making an upload id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// serve answers the requests of the upload protocol (OCI distribution spec, "Pushing blobs"):
// POST starts an upload (or, with ?digest=, pushes a blob in one request; with ?mount=, finds an
// existing blob), PATCH appends a chunk, PUT ?digest= appends the last chunk and completes it,
// GET reports its progress and DELETE cancels it.
func (u *uploads) serve(w http.ResponseWriter, req *http.Request, r route) {
	if req.Body != nil {
		defer func() { _ = req.Body.Close() }()
	}
	if r.kind == routeUploads {
		if req.Method != http.MethodPost {
			writeError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", "uploads start with POST")
			return
		}
		u.post(w, req, r.repo)
		return
	}
	switch req.Method {
	case http.MethodPatch, http.MethodPut, http.MethodGet, http.MethodHead, http.MethodDelete:
	default:
		writeError(w, http.StatusMethodNotAllowed, "UNSUPPORTED", req.Method+" is not an upload method")
		return
	}
	var digest v1.Hash
	if req.Method == http.MethodPut {
		var err error
		if digest, err = parseDigest(req.URL.Query().Get("digest")); err != nil {
			writeRouteError(w, err)
			return
		}
	}
	up, err := u.acquire(r.repo, r.ref)
	if err != nil {
		status, code := http.StatusNotFound, "BLOB_UPLOAD_UNKNOWN"
		if !errors.Is(err, errUploadUnknown) {
			status, code = http.StatusConflict, "BLOB_UPLOAD_INVALID"
		}
		writeError(w, status, code, fmt.Sprintf("upload %s: %v", r.ref, err))
		return
	}
	switch req.Method {
	case http.MethodPatch:
		if cr := req.Header.Get("Content-Range"); cr != "" && !rangeStartsAt(cr, up.size) {
			u.release(up)
			w.Header().Set("Range", rangeHeader(up.size))
			writeError(w, http.StatusRequestedRangeNotSatisfiable, "BLOB_UPLOAD_INVALID",
				fmt.Sprintf("Content-Range %s does not continue the upload, which holds %d bytes", cr, up.size))
			return
		}
		if err := u.appendBody(up, req.Body); err != nil {
			writeUploadError(w, err)
			return
		}
		u.release(up)
		u.progress(w, r.repo, up, http.StatusAccepted)
	case http.MethodPut:
		u.finish(w, up, req.Body, r.repo, digest)
	case http.MethodGet, http.MethodHead:
		u.release(up)
		u.progress(w, r.repo, up, http.StatusNoContent)
	case http.MethodDelete:
		u.drop(up)
		w.WriteHeader(http.StatusNoContent)
	}
}

// post starts an upload, or completes one in a single request.
func (u *uploads) post(w http.ResponseWriter, req *http.Request, repo string) {
	q := req.URL.Query()
	if mount := q.Get("mount"); mount != "" {
		// Blobs are shared by all repositories: mounting one that exists is finding it.
		if h, err := parseDigest(mount); err == nil {
			if _, err := u.blobs.Stat(req.Context(), repo, h); err == nil {
				created(w, repo, h)
				return
			}
		}
	}
	var digest v1.Hash
	monolithic := q.Has("digest")
	if monolithic {
		var err error
		if digest, err = parseDigest(q.Get("digest")); err != nil {
			writeRouteError(w, err)
			return
		}
	}
	up, err := u.start(repo)
	if err != nil {
		writeUploadError(w, err)
		return
	}
	if !monolithic {
		u.release(up)
		u.progress(w, repo, up, http.StatusAccepted)
		return
	}
	u.finish(w, up, req.Body, repo, digest)
}

// finish appends the last of the content to the busy upload up, checks the whole against digest
// and stores the blob. The upload is gone afterwards.
func (u *uploads) finish(w http.ResponseWriter, up *upload, body io.Reader, repo string, digest v1.Hash) {
	if err := u.appendBody(up, body); err != nil {
		writeUploadError(w, err)
		return
	}
	if err := u.commit(up, digest); err != nil {
		writeUploadError(w, err)
		return
	}
	created(w, repo, digest)
}

// progress answers with where the upload is and how much it holds.
func (u *uploads) progress(w http.ResponseWriter, repo string, up *upload, status int) {
	w.Header().Set("Location", "/v2/"+repo+"/blobs/uploads/"+up.id)
	w.Header().Set("Range", rangeHeader(up.size))
	w.Header().Set("Docker-Upload-UUID", up.id)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(status)
}

// created answers a completed blob push.
func created(w http.ResponseWriter, repo string, digest v1.Hash) {
	w.Header().Set("Location", "/v2/"+repo+"/blobs/"+digest.String())
	w.Header().Set("Docker-Content-Digest", digest.String())
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusCreated)
}

// rangeHeader is the Range of an upload holding size bytes: 0-<last byte>, 0-0 when empty.
func rangeHeader(size int64) string {
	return "0-" + strconv.FormatInt(max(size-1, 0), 10)
}

// rangeStartsAt is true when a chunk's Content-Range ("<start>-<end>") starts at offset.
func rangeStartsAt(contentRange string, offset int64) bool {
	var start, end int64
	if _, err := fmt.Sscanf(contentRange, "%d-%d", &start, &end); err != nil {
		return false
	}
	return start == offset && end >= start
}

// writeUploadError answers a failed upload request.
func writeUploadError(w http.ResponseWriter, err error) {
	var tooLarge *tooLargeError
	var tooMany *tooManyUploadsError
	var badDigest *digestError
	var body *bodyError
	switch {
	case errors.As(err, &body):
		writeError(w, http.StatusBadRequest, "BLOB_UPLOAD_INVALID", err.Error())
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, "SIZE_INVALID", err.Error())
	case errors.As(err, &tooMany):
		w.Header().Set("Retry-After", "60")
		writeError(w, http.StatusTooManyRequests, "TOOMANYREQUESTS", err.Error())
	case errors.As(err, &badDigest):
		writeError(w, http.StatusBadRequest, "DIGEST_INVALID", err.Error())
	default:
		writeError(w, http.StatusInternalServerError, "UNKNOWN", err.Error())
	}
}
