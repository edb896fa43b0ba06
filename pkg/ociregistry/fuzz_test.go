package ociregistry_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
)

// FuzzHandler sends one request of any method, path, query, headers and body per input to one
// registry, whose state (uploads, blobs, manifests) carries over from input to input, and checks
// that it never panics, never fails with an internal error, and that what it stores under a
// digest has that digest.
func FuzzHandler(f *testing.F) {
	manifest := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",` +
		`"config":{"mediaType":"application/vnd.oci.empty.v1+json","size":2,"digest":"` + digestOf([]byte("{}")) + `"},"layers":[]}`)
	seeds := []struct {
		method, path, query, contentRange, contentType string
		body                                           []byte
	}{
		{"GET", "/v2/", "", "", "", nil},
		{"GET", "/v2/_catalog", "n=2", "", "", nil},
		{"POST", "/v2/flotilla/a/blobs/uploads/", "digest=" + digestOf([]byte("{}")), "", "", []byte("{}")},
		{"POST", "/v2/flotilla/a/blobs/uploads/", "", "", "", nil},
		{"PATCH", "/v2/flotilla/a/blobs/uploads/00000000000000000000000000000000", "", "0-3", "", []byte("data")},
		{"PUT", "/v2/flotilla/a/blobs/uploads/00000000000000000000000000000000", "digest=" + digestOf([]byte("data")), "", "", nil},
		{"POST", "/v2/flotilla/b/blobs/uploads/", "mount=" + digestOf([]byte("{}")) + "&from=flotilla/a", "", "", nil},
		{"PUT", "/v2/flotilla/a/manifests/v1", "", "", "application/vnd.oci.image.manifest.v1+json", manifest},
		{"PUT", "/v2/flotilla/a/manifests/" + digestOf(manifest), "", "", "application/vnd.oci.image.manifest.v1+json", manifest},
		{"PUT", "/v2/flotilla/a/manifests/" + digestOf([]byte("x")), "", "", "application/vnd.oci.image.index.v1+json", manifest},
		{"GET", "/v2/flotilla/a/manifests/v1", "", "", "", nil},
		{"GET", "/v2/flotilla/a/blobs/" + digestOf([]byte("{}")), "", "bytes=0-1", "", nil},
		{"GET", "/v2/flotilla/a/tags/list", "n=1&last=a", "", "", nil},
		{"GET", "/v2/flotilla/a/referrers/" + digestOf(manifest), "", "", "", nil},
		{"DELETE", "/v2/flotilla/a/manifests/v1", "", "", "", nil},
		{"DELETE", "/v2/flotilla/a/blobs/" + digestOf([]byte("{}")), "", "", "", nil},
		{"DELETE", "/v2/flotilla/a/blobs/" + digestOf([]byte("never pushed")), "", "", "", nil},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, s.contentRange, s.contentType, s.body)
	}
	dir := f.TempDir()
	var mu sync.Mutex
	now := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	h, err := ociregistry.NewHandler(ociregistry.Options{
		Dir: dir, MaxBlobSize: 64 << 10, MaxUploads: 8, UploadTimeout: 5 * time.Minute,
		// Every reading moves the clock 30 s on, so uploads expire as inputs go by.
		Now: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			now = now.Add(30 * time.Second)
			return now
		},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, method, path, query, contentRange, contentType string, body []byte) {
		req, err := http.NewRequest(method, "http://registry.test/", bytes.NewReader(body))
		if err != nil {
			return
		}
		req.URL.Path, req.URL.RawQuery = path, query
		req.Header.Set("Content-Range", contentRange)
		req.Header.Set("Range", contentRange)
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 100 || rec.Code > 599 || rec.Code == http.StatusInternalServerError {
			t.Fatalf("%s %s?%s answered %d: %s", method, path, query, rec.Code, rec.Body.String())
		}
		if rec.Code == http.StatusCreated {
			checkStored(t, dir, rec.Header().Get("Docker-Content-Digest"), method, path)
		}
	})
}

// checkStored checks that a pushed blob's file or a pushed manifest has digest.
func checkStored(t *testing.T, dir, digest, method, path string) {
	t.Helper()
	hexDigest, ok := strings.CutPrefix(digest, "sha256:")
	if !ok {
		t.Fatalf("%s %s answered 201 with digest %q", method, path, digest)
	}
	kind := "blobs"
	if strings.Contains(path, "/manifests/") {
		kind = "manifests"
	}
	data, err := os.ReadFile(filepath.Join(dir, kind, "sha256", hexDigest))
	if err != nil {
		t.Fatalf("%s %s answered 201, but %s %s is not stored: %v", method, path, kind, digest, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hexDigest {
		t.Fatalf("%s %s stored %s %s with the content of sha256:%x", method, path, kind, digest, sum)
	}
}
