package ociregistry

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// routeKind is what a request path addresses.
type routeKind int

const (
	// routeBase is /v2/, the API version check.
	routeBase routeKind = iota
	// routeCatalog is /v2/_catalog.
	routeCatalog
	// routeTags is /v2/<name>/tags/list.
	routeTags
	// routeManifest is /v2/<name>/manifests/<reference>.
	routeManifest
	// routeBlob is /v2/<name>/blobs/<digest>.
	routeBlob
	// routeUploads is /v2/<name>/blobs/uploads/, where uploads start.
	routeUploads
	// routeUpload is /v2/<name>/blobs/uploads/<id>, one upload.
	routeUpload
	// routeReferrers is /v2/<name>/referrers/<digest>.
	routeReferrers
)

// route is a parsed request path.
type route struct {
	kind routeKind
	// repo is the repository name (not for routeBase and routeCatalog).
	repo string
	// ref is the manifest's tag or digest, the blob's or referrers' digest, or the upload's id.
	ref string
}

// reservedComponents are the path components that end a repository name in the distribution
// API's paths. A repository name holding one is refused: /v2/a/blobs/uploads/x would be
// ambiguous, and go-containerregistry, which serves what this package forwards, might read
// the path otherwise than this package checked it.
var reservedComponents = map[string]bool{"blobs": true, "manifests": true, "tags": true, "referrers": true, "uploads": true}

var (
	// nameComponent is one component of a repository name (distribution spec).
	nameComponent = regexp.MustCompile(`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*$`)
	// tagPattern is a tag (distribution spec).
	tagPattern = regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
	// uploadIDPattern is what newUploadID makes.
	uploadIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)
)

// maxNameLength bounds a repository name (the spec's 255 characters for host and name).
const maxNameLength = 255

// errNotFound is a path the API does not have.
var errNotFound = errors.New("no such path in the OCI distribution API")

// routeError is a request path that addresses the API with an invalid name or reference.
type routeError struct {
	code, message string
}

func (e *routeError) Error() string { return e.message }

// parseRoute parses an /v2/... path. It returns errNotFound for paths outside the API and a
// *routeError for an invalid repository name, tag, digest or upload id. A request that parses
// is one go-containerregistry reads the same way.
func parseRoute(path string) (route, error) {
	if path == "/v2" || path == "/v2/" {
		return route{kind: routeBase}, nil
	}
	rest, ok := strings.CutPrefix(path, "/v2/")
	if !ok {
		return route{}, errNotFound
	}
	if rest == "_catalog" {
		return route{kind: routeCatalog}, nil
	}
	elem := strings.Split(rest, "/")
	n := len(elem)
	var r route
	var repo []string
	switch {
	case n >= 3 && elem[n-3] == "blobs" && elem[n-2] == "uploads" && elem[n-1] == "":
		r, repo = route{kind: routeUploads}, elem[:n-3]
	case n >= 2 && elem[n-2] == "blobs" && elem[n-1] == "uploads":
		r, repo = route{kind: routeUploads}, elem[:n-2]
	case n >= 3 && elem[n-3] == "blobs" && elem[n-2] == "uploads":
		r, repo = route{kind: routeUpload, ref: elem[n-1]}, elem[:n-3]
	case n >= 2 && elem[n-2] == "blobs":
		r, repo = route{kind: routeBlob, ref: elem[n-1]}, elem[:n-2]
	case n >= 2 && elem[n-2] == "manifests":
		r, repo = route{kind: routeManifest, ref: elem[n-1]}, elem[:n-2]
	case n >= 2 && elem[n-2] == "tags" && elem[n-1] == "list":
		r, repo = route{kind: routeTags}, elem[:n-2]
	case n >= 2 && elem[n-2] == "referrers":
		r, repo = route{kind: routeReferrers, ref: elem[n-1]}, elem[:n-2]
	default:
		return route{}, errNotFound
	}
	if err := checkName(repo); err != nil {
		return route{}, err
	}
	r.repo = strings.Join(repo, "/")
	if err := r.checkRef(); err != nil {
		return route{}, err
	}
	return r, nil
}

// checkName checks a repository name's components.
func checkName(components []string) error {
	name := strings.Join(components, "/")
	if len(components) == 0 || len(name) > maxNameLength {
		return &routeError{"NAME_INVALID", fmt.Sprintf("repository name %q: 1 to %d characters", name, maxNameLength)}
	}
	for _, c := range components {
		if !nameComponent.MatchString(c) {
			return &routeError{"NAME_INVALID", fmt.Sprintf("repository name %q: each component is lowercase letters and digits, separated by '.', '_', '__' or '-'", name)}
		}
		if reservedComponents[c] {
			return &routeError{"NAME_INVALID", fmt.Sprintf("repository name %q: a component may not be %q, a word of the API's paths", name, c)}
		}
	}
	return nil
}

// checkRef checks the route's reference as its kind needs it.
func (r route) checkRef() error {
	switch r.kind {
	case routeManifest:
		if isDigest(r.ref) {
			_, err := parseDigest(r.ref)
			return err
		}
		if !tagPattern.MatchString(r.ref) {
			return &routeError{"MANIFEST_INVALID", fmt.Sprintf("reference %q is neither a tag (up to 128 letters, digits, '_', '.', '-') nor a sha256 digest", r.ref)}
		}
	case routeBlob, routeReferrers:
		_, err := parseDigest(r.ref)
		return err
	case routeUpload:
		if !uploadIDPattern.MatchString(r.ref) {
			return &routeError{"BLOB_UPLOAD_UNKNOWN", fmt.Sprintf("upload %q is unknown", r.ref)}
		}
	}
	return nil
}

// isDigest tells a digest reference ("algorithm:hex") from a tag, which has no colon.
func isDigest(ref string) bool { return strings.Contains(ref, ":") }

// parseDigest parses a sha256 digest, the only algorithm the registry stores.
func parseDigest(s string) (v1.Hash, error) {
	h, err := v1.NewHash(s)
	if err != nil || h.Algorithm != "sha256" {
		return v1.Hash{}, &routeError{"DIGEST_INVALID", fmt.Sprintf("digest %q is not sha256:<64 hex digits>", s)}
	}
	return h, nil
}

// checkParams checks what go-containerregistry reads of a request besides its path, refusing
// what it does not check itself: a blob Range other than "bytes=<start>-<end>" with start <=
// end, and a negative page size of a tags listing.
func checkParams(r route, req *http.Request) error {
	switch r.kind {
	case routeBlob:
		if rng := req.Header.Get("Range"); rng != "" && req.Method == http.MethodGet {
			var start, end int64
			var rest string
			n, _ := fmt.Sscanf(rng, "bytes=%d-%d%s", &start, &end, &rest)
			if n != 2 || start < 0 || end < start || rng != fmt.Sprintf("bytes=%d-%d", start, end) {
				return &routeError{"RANGE_INVALID", fmt.Sprintf("Range %q is not bytes=<first>-<last>", rng)}
			}
		}
	case routeTags:
		if ns := req.URL.Query().Get("n"); ns != "" {
			if n, err := strconv.Atoi(ns); err != nil || n < 0 {
				return &routeError{"PAGINATION_NUMBER_INVALID", fmt.Sprintf("n=%s is not a number of tags", ns)}
			}
		}
	}
	return nil
}

// writeRouteError answers a path that does not parse.
func writeRouteError(w http.ResponseWriter, err error) {
	var re *routeError
	if errors.As(err, &re) {
		status := http.StatusBadRequest
		switch re.code {
		case "BLOB_UPLOAD_UNKNOWN":
			status = http.StatusNotFound
		case "RANGE_INVALID":
			status = http.StatusRequestedRangeNotSatisfiable
		}
		writeError(w, status, re.code, re.message)
		return
	}
	writeError(w, http.StatusNotFound, "NOT_FOUND", err.Error())
}
