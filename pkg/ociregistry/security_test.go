package ociregistry_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/pki"
)

const (
	user     = "robot"
	password = "s3cret-Pa55"
)

// htpasswd writes an htpasswd file with user and password.
func htpasswd(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "htpasswd")
	if err := ociregistry.SetHTPasswdUser(path, user, password); err != nil {
		t.Fatal(err)
	}
	return path
}

// serveTLS serves a registry with opts over TLS on a loopback port and returns its host:port
// and a transport that trusts its certificate.
func serveTLS(t *testing.T, opts ociregistry.Options) (string, http.RoundTripper) {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	h, err := ociregistry.NewHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "https://"), srv.Client().Transport
}

// statusOf is the HTTP status of a go-containerregistry error, 0 when it has none.
func statusOf(err error) int {
	var te *transport.Error
	if errors.As(err, &te) {
		return te.StatusCode
	}
	return 0
}

// syncBuffer is a log that requests write to concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestOnlyItsUsersPushAndPullWhenTheRegistryAuthenticates(t *testing.T) {
	g := NewWithT(t)
	logs := &syncBuffer{}
	host, tr := serveTLS(t, ociregistry.Options{HTPasswdFile: htpasswd(t), Log: logs})
	img, err := random.Image(512, 1)
	g.Expect(err).NotTo(HaveOccurred())
	ref := mustRef(g, host+"/flotilla/demo:v1")
	noRetry := remote.WithRetryBackoff(remote.Backoff{Steps: 1})
	as := func(u, p string) []remote.Option {
		return []remote.Option{remote.WithTransport(tr), remote.WithAuth(&authn.Basic{Username: u, Password: p}), noRetry}
	}
	anonymous := []remote.Option{remote.WithTransport(tr), noRetry}

	err = remote.Write(ref, img, anonymous...)
	g.Expect(statusOf(err)).To(Equal(http.StatusUnauthorized), "an anonymous push is refused: %v", err)
	err = remote.Write(ref, img, as(user, "wrong")...)
	g.Expect(statusOf(err)).To(Equal(http.StatusUnauthorized), "a wrong password is refused: %v", err)
	err = remote.Write(ref, img, as("intruder", password)...)
	g.Expect(statusOf(err)).To(Equal(http.StatusUnauthorized), "an unknown user is refused: %v", err)

	g.Expect(remote.Write(ref, img, as(user, password)...)).To(Succeed())
	_, err = remote.Image(ref, anonymous...)
	g.Expect(statusOf(err)).To(Equal(http.StatusUnauthorized), "an anonymous pull is refused: %v", err)
	_, err = remote.Image(ref, as(user, "wrong")...)
	g.Expect(statusOf(err)).To(Equal(http.StatusUnauthorized), "a pull with a wrong password is refused: %v", err)
	pulled, err := remote.Image(ref, as(user, password)...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Digest()).To(Equal(must(img.Digest())))

	// Every path asks for credentials, with the challenge Docker, Helm, ORAS and containerd
	// answer with basic auth.
	c := &http.Client{Transport: tr}
	for _, path := range []string{"/v2/", "/v2/_catalog", "/v2/flotilla/demo/tags/list", "/v2/flotilla/demo/manifests/v1", "/v2/not%20a%20path"} {
		resp, err := c.Get("https://" + host + path)
		g.Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), path)
		g.Expect(resp.Header.Get("WWW-Authenticate")).To(HavePrefix(`Basic realm="flotilla registry"`), path)
	}

	// helm registry login, push and pull with the stored credentials.
	creds := filepath.Join(t.TempDir(), "helm-registry.json")
	helmClient := func() *registry.Client {
		hc, err := registry.NewClient(registry.ClientOptHTTPClient(&http.Client{Transport: tr}),
			registry.ClientOptCredentialsFile(creds), registry.ClientOptWriter(io.Discard))
		g.Expect(err).NotTo(HaveOccurred())
		return hc
	}
	g.Expect(helmClient().Login(host, registry.LoginOptBasicAuth(user, "wrong"))).NotTo(Succeed(), "helm registry login with a wrong password fails")
	chart := charttest.Hello("0.1.0")
	_, err = helmClient().Push(charttest.Package(t, chart), host+"/charts/hello:0.1.0")
	g.Expect(err).To(HaveOccurred(), "helm push without logging in is refused")
	g.Expect(helmClient().Login(host, registry.LoginOptBasicAuth(user, password))).To(Succeed())
	pushed, err := helmClient().Push(charttest.Package(t, chart), host+"/charts/hello:0.1.0")
	g.Expect(err).NotTo(HaveOccurred())
	got, err := helmClient().Pull(host + "/charts/hello:0.1.0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Manifest.Digest).To(Equal(pushed.Manifest.Digest))

	log := logs.String()
	g.Expect(log).To(ContainSubstring(`user="robot"`))
	g.Expect(log).To(ContainSubstring(`user="intruder"(refused)`))
	for _, secret := range []string{password, base64.StdEncoding.EncodeToString([]byte(user + ":" + password))} {
		g.Expect(log).NotTo(ContainSubstring(secret), "no credentials in the log")
	}
}

// The default setup's registry: anyone pulls (real nodes through their gateway's forward, with no
// credentials), and only its users push and delete, whatever address they come from.
func TestAnonymousClientsOnlyPullFromARegistryWithAnonymousPull(t *testing.T) {
	g := NewWithT(t)
	h, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir(), HTPasswdFile: htpasswd(t), AnonymousPull: true})
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	img, err := random.Image(512, 1)
	g.Expect(err).NotTo(HaveOccurred())
	ref := mustRef(g, host+"/registry.k8s.io/pause:3.10")
	noRetry := remote.WithRetryBackoff(remote.Backoff{Steps: 1})
	pusher := remote.WithAuth(&authn.Basic{Username: user, Password: password})

	err = remote.Write(ref, img, noRetry)
	g.Expect(statusOf(err)).To(Equal(http.StatusUnauthorized), "an anonymous push from loopback is refused: %v", err)
	g.Expect(err).To(MatchError(ContainSubstring("pushing and deleting need credentials, anonymous clients may only pull")))
	g.Expect(remote.Write(ref, img, pusher, noRetry)).To(Succeed(), "a user pushes")
	pulled, err := remote.Image(ref, noRetry)
	g.Expect(err).NotTo(HaveOccurred(), "anyone pulls")
	g.Expect(pulled.Digest()).To(Equal(must(img.Digest())))
	_, err = remote.Image(ref, remote.WithAuth(&authn.Basic{Username: user, Password: "wrong"}), noRetry)
	g.Expect(statusOf(err)).To(Equal(http.StatusUnauthorized), "wrong credentials are refused, even for a pull: %v", err)

	digest := must(img.Digest()).String()
	manifest, err := img.RawManifest()
	g.Expect(err).NotTo(HaveOccurred())
	for _, write := range []struct{ method, path string }{
		{http.MethodPut, "/v2/registry.k8s.io/pause/manifests/3.10"},
		{http.MethodPost, "/v2/registry.k8s.io/pause/blobs/uploads/"},
		{http.MethodPatch, "/v2/registry.k8s.io/pause/blobs/uploads/0123456789abcdef0123456789abcdef"},
		{http.MethodDelete, "/v2/registry.k8s.io/pause/manifests/" + digest},
		{http.MethodDelete, "/v2/registry.k8s.io/pause/blobs/" + must(img.ConfigName()).String()},
	} {
		req, err := http.NewRequest(write.method, srv.URL+write.path, bytes.NewReader(manifest))
		g.Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized), "%s %s", write.method, write.path)
		g.Expect(resp.Header.Get("WWW-Authenticate")).To(HavePrefix(`Basic realm="flotilla registry"`))
		g.Expect(string(body)).To(ContainSubstring("push-credentials"), "the refusal says where the credential is")
	}
	pulled, err = remote.Image(ref, noRetry)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Digest()).To(Equal(must(img.Digest())), "what the anonymous client tried changed nothing")
	g.Expect(remote.Delete(mustRef(g, host+"/registry.k8s.io/pause@"+digest), pusher, noRetry)).To(Succeed(), "a user deletes")
}

// A handler that does not authenticate (tests only: Serve refuses it) trusts its machine's users:
// what reaches it from another address (a real node through its gateway's forward) may pull but
// neither push nor delete.
func TestAnAnonymousRegistryTakesWritesFromLoopbackOnly(t *testing.T) {
	g := NewWithT(t)
	h, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	img, err := random.Image(512, 1)
	g.Expect(err).NotTo(HaveOccurred())
	host := strings.TrimPrefix(srv.URL, "http://")
	g.Expect(remote.Write(mustRef(g, host+"/flotilla/demo:v1"), img)).To(Succeed(), "a push from loopback")
	manifest, err := img.RawManifest()
	g.Expect(err).NotTo(HaveOccurred())
	mediaType, err := img.MediaType()
	g.Expect(err).NotTo(HaveOccurred())

	fromNode := func(method, path string, body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.RemoteAddr = "10.200.3.2:41000" // a real node, through its gateway's forward
		if body != nil {
			req.Header.Set("Content-Type", string(mediaType))
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		g.Expect(fromNode(method, "/v2/flotilla/demo/manifests/v1", nil).Code).To(Equal(http.StatusOK), "%s: a node pulls", method)
	}
	for _, write := range []struct{ method, path string }{
		{http.MethodPut, "/v2/flotilla/demo/manifests/v1"},
		{http.MethodPut, "/v2/flotilla/demo/manifests/v2"},
		{http.MethodPost, "/v2/flotilla/demo/blobs/uploads/"},
		{http.MethodDelete, "/v2/flotilla/demo/manifests/v1"},
		{http.MethodDelete, "/v2/flotilla/demo/blobs/" + must(img.ConfigName()).String()},
	} {
		rec := fromNode(write.method, write.path, manifest)
		g.Expect(rec.Code).To(Equal(http.StatusForbidden), "%s %s", write.method, write.path)
		g.Expect(rec.Body.String()).To(ContainSubstring(`"code":"DENIED"`))
		g.Expect(rec.Body.String()).To(ContainSubstring("only clients on its machine's loopback may push or delete; 10.200.3.2:41000 may only pull"))
	}
	pulled, err := remote.Image(mustRef(g, host+"/flotilla/demo:v1"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Digest()).To(Equal(must(img.Digest())), "what the node tried changed nothing")
	_, err = remote.Image(mustRef(g, host+"/flotilla/demo:v2"))
	g.Expect(statusOf(err)).To(Equal(http.StatusNotFound))
}

// The credentials of a management cluster's mirror reach every real node, where a tenant's
// privileged Pod can read them: they belong to a user who may only pull.
func TestAPullOnlyUserPullsAndNothingMore(t *testing.T) {
	g := NewWithT(t)
	users := htpasswd(t)
	g.Expect(ociregistry.SetHTPasswdUser(users, "puller", "pull-Pa55")).To(Succeed())
	_, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir(), HTPasswdFile: users, PullOnlyUsers: []string{"puller", "nobody"}})
	g.Expect(err).To(MatchError(ContainSubstring(`--pull-only-users: "nobody" is not a user of the htpasswd file`)))

	host, tr := serveTLS(t, ociregistry.Options{HTPasswdFile: users, PullOnlyUsers: []string{"puller"}})
	as := func(u, p string) []remote.Option {
		return []remote.Option{remote.WithTransport(tr), remote.WithAuth(&authn.Basic{Username: u, Password: p}), remote.WithRetryBackoff(remote.Backoff{Steps: 1})}
	}
	img, err := random.Image(512, 1)
	g.Expect(err).NotTo(HaveOccurred())
	ref := mustRef(g, host+"/flotilla/demo:v1")
	g.Expect(remote.Write(ref, img, as(user, password)...)).To(Succeed(), "another user pushes")
	pulled, err := remote.Image(ref, as("puller", "pull-Pa55")...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Digest()).To(Equal(must(img.Digest())))

	other, err := random.Image(512, 1)
	g.Expect(err).NotTo(HaveOccurred())
	err = remote.Write(ref, other, as("puller", "pull-Pa55")...)
	g.Expect(statusOf(err)).To(Equal(http.StatusForbidden), "the pull-only user's push is refused: %v", err)
	g.Expect(err).To(MatchError(ContainSubstring(`user "puller" may only pull`)))
	err = remote.Delete(mustRef(g, host+"/flotilla/demo@"+must(img.Digest()).String()), as("puller", "pull-Pa55")...)
	g.Expect(statusOf(err)).To(Equal(http.StatusForbidden), "and so is a delete: %v", err)
	pulled, err = remote.Image(ref, as(user, password)...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Digest()).To(Equal(must(img.Digest())), "what the pull-only user tried changed nothing")
}

func TestBlobsOverTheSizeLimitAreRefused(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	host, tr := serveTLS(t, ociregistry.Options{Dir: dir, MaxBlobSize: 4096})
	c := &http.Client{Transport: tr}
	base := "https://" + host + "/v2/flotilla/big/blobs/uploads/"

	big := bytes.Repeat([]byte("x"), 5000)
	resp := do(g, c, http.MethodPost, base+"?digest="+digestOf(big), big, nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusRequestEntityTooLarge), "a blob pushed in one request")
	g.Expect(resp.body).To(ContainSubstring("--max-blob-size"))

	// In chunks, each under the limit: refused when the total passes it, and the upload is gone.
	resp = do(g, c, http.MethodPost, base, nil, nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted))
	upload := "https://" + host + resp.Header.Get("Location")
	resp = do(g, c, http.MethodPatch, upload, big[:3000], map[string]string{"Content-Range": "0-2999"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted))
	g.Expect(resp.Header.Get("Range")).To(Equal("0-2999"))
	resp = do(g, c, http.MethodPatch, upload, big[3000:], map[string]string{"Content-Range": "3000-4999"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusRequestEntityTooLarge), "chunks that add up past the limit")
	g.Expect(do(g, c, http.MethodGet, upload, nil, nil).StatusCode).To(Equal(http.StatusNotFound))
	g.Expect(os.ReadDir(filepath.Join(dir, "uploads"))).To(BeEmpty(), "the refused upload's file is deleted")

	// A client that does not know the limit gets it as an error.
	img, err := random.Image(8192, 1)
	g.Expect(err).NotTo(HaveOccurred())
	err = remote.Write(mustRef(g, host+"/flotilla/big:v1"), img, remote.WithTransport(tr), remote.WithRetryBackoff(remote.Backoff{Steps: 1}))
	g.Expect(statusOf(err)).To(Equal(http.StatusRequestEntityTooLarge), "%v", err)

	small, err := random.Image(1024, 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(mustRef(g, host+"/flotilla/small:v1"), small, remote.WithTransport(tr))).To(Succeed(), "blobs under the limit are fine")
}

func TestABlobOrManifestWhoseContentIsNotItsDigestIsRefused(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	host, tr := serveTLS(t, ociregistry.Options{Dir: dir})
	c := &http.Client{Transport: tr}
	img, err := random.Image(256, 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remote.Write(mustRef(g, host+"/flotilla/demo:v1"), img, remote.WithTransport(tr))).To(Succeed())
	manifest, err := img.RawManifest()
	g.Expect(err).NotTo(HaveOccurred())
	ctype := map[string]string{"Content-Type": "application/vnd.docker.distribution.manifest.v2+json"}

	forged := append(bytes.Clone(manifest), ' ')
	resp := do(g, c, http.MethodPut, "https://"+host+"/v2/flotilla/demo/manifests/"+digestOf(manifest), forged, ctype)
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
	g.Expect(resp.body).To(ContainSubstring("DIGEST_INVALID"))
	g.Expect(do(g, c, http.MethodGet, "https://"+host+"/v2/flotilla/demo/manifests/"+digestOf(forged), nil, nil).StatusCode).
		To(Equal(http.StatusNotFound), "the forged body is not stored under its own digest either")
	refs, err := os.ReadFile(filepath.Join(dir, "refs.json"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(refs)).NotTo(ContainSubstring(strings.TrimPrefix(digestOf(forged), "sha256:")))
	g.Expect(do(g, c, http.MethodPut, "https://"+host+"/v2/flotilla/demo/manifests/"+digestOf(manifest), manifest, ctype).StatusCode).
		To(Equal(http.StatusCreated), "the true body is accepted by its digest")

	blob := []byte("the blob")
	resp = do(g, c, http.MethodPost, "https://"+host+"/v2/flotilla/demo/blobs/uploads/?digest="+digestOf([]byte("another blob")), blob, nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest))
	g.Expect(resp.body).To(ContainSubstring("DIGEST_INVALID"))
	g.Expect(do(g, c, http.MethodHead, "https://"+host+"/v2/flotilla/demo/blobs/"+digestOf([]byte("another blob")), nil, nil).StatusCode).
		To(Equal(http.StatusNotFound))
}

func TestAnAbandonedUploadExpires(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	clock := &fakeClock{now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	host, tr := serveTLS(t, ociregistry.Options{Dir: dir, UploadTimeout: 10 * time.Minute, MaxUploads: 2, Now: clock.Now})
	c := &http.Client{Transport: tr}
	start := func() *response {
		return do(g, c, http.MethodPost, "https://"+host+"/v2/flotilla/demo/blobs/uploads/", nil, nil)
	}

	resp := start()
	g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted))
	abandoned := "https://" + host + resp.Header.Get("Location")
	id := resp.Header.Get("Docker-Upload-UUID")
	g.Expect(do(g, c, http.MethodPatch, abandoned, []byte("half a blob"), nil).StatusCode).To(Equal(http.StatusAccepted))
	g.Expect(filepath.Join(dir, "uploads", id)).To(BeARegularFile(), "uploads are kept on disk, not in memory")
	resp = start()
	g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted))
	active := "https://" + host + resp.Header.Get("Location")

	resp = start()
	g.Expect(resp.StatusCode).To(Equal(http.StatusTooManyRequests), "the limit on uploads in progress")
	g.Expect(resp.body).To(ContainSubstring("--max-uploads"))

	clock.Step(9 * time.Minute)
	g.Expect(do(g, c, http.MethodPatch, active, []byte("more"), nil).StatusCode).To(Equal(http.StatusAccepted), "a request keeps an upload alive")
	clock.Step(2 * time.Minute)
	resp = start()
	g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted), "the abandoned upload expired, making room")
	g.Expect(do(g, c, http.MethodPatch, abandoned, []byte("the rest"), nil).StatusCode).To(Equal(http.StatusNotFound))
	g.Expect(filepath.Join(dir, "uploads", id)).NotTo(BeAnExistingFile())
	g.Expect(do(g, c, http.MethodGet, active, nil, nil).Header.Get("Range")).To(Equal("0-3"), "the live upload is kept")
}

func TestUploadsFollowTheProtocol(t *testing.T) {
	g := NewWithT(t)
	host, tr := serveTLS(t, ociregistry.Options{})
	c := &http.Client{Transport: tr}
	blob := []byte("hello, registry")
	resp := do(g, c, http.MethodPost, "https://"+host+"/v2/flotilla/a/blobs/uploads/", nil, nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusAccepted))
	location := resp.Header.Get("Location")
	upload := "https://" + host + location

	g.Expect(do(g, c, http.MethodPatch, "https://"+host+strings.Replace(location, "flotilla/a", "flotilla/b", 1), blob, nil).StatusCode).
		To(Equal(http.StatusNotFound), "an upload belongs to its repository")
	g.Expect(do(g, c, http.MethodPatch, upload, blob[:5], map[string]string{"Content-Range": "0-4"}).StatusCode).To(Equal(http.StatusAccepted))
	resp = do(g, c, http.MethodPatch, upload, blob[5:], map[string]string{"Content-Range": "6-14"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusRequestedRangeNotSatisfiable), "a chunk that does not continue the upload")
	g.Expect(resp.Header.Get("Range")).To(Equal("0-4"))
	resp = do(g, c, http.MethodPut, upload+"?digest="+digestOf(blob), blob[5:], nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusCreated))
	g.Expect(resp.Header.Get("Docker-Content-Digest")).To(Equal(digestOf(blob)))
	resp = do(g, c, http.MethodGet, "https://"+host+"/v2/flotilla/a/blobs/"+digestOf(blob), nil, nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	g.Expect(resp.body).To(Equal(string(blob)))
	g.Expect(do(g, c, http.MethodPut, upload+"?digest="+digestOf(blob), nil, nil).StatusCode).To(Equal(http.StatusNotFound), "a completed upload is gone")

	g.Expect(do(g, c, http.MethodDelete, "https://"+host+"/v2/flotilla/a/blobs/"+digestOf([]byte("never pushed")), nil, nil).StatusCode).
		To(Equal(http.StatusNotFound), "deleting a blob that is not there")

	// A blob that exists is mounted into another repository without an upload.
	resp = do(g, c, http.MethodPost, "https://"+host+"/v2/flotilla/b/blobs/uploads/?mount="+digestOf(blob)+"&from=flotilla/a", nil, nil)
	g.Expect(resp.StatusCode).To(Equal(http.StatusCreated))

	for path, want := range map[string]int{
		"/v2/Flotilla/a/manifests/v1":                  http.StatusBadRequest,
		"/v2/flotilla/blobs/manifests/v1":              http.StatusBadRequest,
		"/v2/flotilla/a/manifests/bad tag":             http.StatusBadRequest,
		"/v2/flotilla/a/manifests/md5:abc":             http.StatusBadRequest,
		"/v2/flotilla/a/blobs/sha256:abc":              http.StatusBadRequest,
		"/v2/flotilla/a/blobs/uploads/../../../etc":    http.StatusNotFound,
		"/v2/flotilla/a/nothing":                       http.StatusNotFound,
		"/v2/flotilla/a/tags/list?n=-1":                http.StatusBadRequest,
		"/v2/flotilla/a/blobs/uploads/0123456789abcde": http.StatusNotFound,
	} {
		g.Expect(do(g, c, http.MethodGet, "https://"+host+path, nil, nil).StatusCode).To(Equal(want), path)
	}
	resp = do(g, c, http.MethodGet, "https://"+host+"/v2/flotilla/a/blobs/"+digestOf(blob), nil, map[string]string{"Range": "bytes=5-2"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusRequestedRangeNotSatisfiable))
	resp = do(g, c, http.MethodGet, "https://"+host+"/v2/flotilla/a/blobs/"+digestOf(blob), nil, map[string]string{"Range": "bytes=0-4"})
	g.Expect(resp.StatusCode).To(Equal(http.StatusPartialContent))
	g.Expect(resp.body).To(Equal("hello"))
}

func TestARegistryAuthenticatesWritesAndNeedsTLSOffLoopback(t *testing.T) {
	tls := ociregistry.Options{TLSCertFile: "cert.pem", TLSKeyFile: "key.pem"}
	for _, tc := range []struct {
		name      string
		opts      ociregistry.Options
		wantError []string
	}{
		{name: "loopback with authentication and without TLS is fine", opts: ociregistry.Options{Listen: "127.0.0.1:5001", HTPasswdFile: "users"}},
		{name: "localhost is loopback", opts: ociregistry.Options{Listen: "localhost:5001", HTPasswdFile: "users", AnonymousPull: true}},
		{name: "a registry without users is refused, loopback or not", opts: ociregistry.Options{Listen: "127.0.0.1:5001"},
			wantError: []string{"--htpasswd is required: the registry authenticates every push and delete"}},
		{name: "every interface without TLS and users is refused", opts: ociregistry.Options{Listen: "0.0.0.0:5001"},
			wantError: []string{"--listen 0.0.0.0:5001 is not a loopback address", "--tls-cert-file", "--htpasswd", "listen on 127.0.0.1"}},
		{name: "an empty host is every interface", opts: ociregistry.Options{Listen: ":5001", HTPasswdFile: "users"},
			wantError: []string{"--listen :5001 is not a loopback address", "add TLS"}},
		{name: "TLS without authentication is refused", opts: ociregistry.Options{Listen: "10.0.0.1:5001", TLSCertFile: tls.TLSCertFile, TLSKeyFile: tls.TLSKeyFile},
			wantError: []string{"add authentication (--htpasswd FILE"}},
		{name: "anonymous pulls are for loopback", opts: ociregistry.Options{Listen: "10.0.0.1:5001", TLSCertFile: tls.TLSCertFile, TLSKeyFile: tls.TLSKeyFile, HTPasswdFile: "users", AnonymousPull: true},
			wantError: []string{"--anonymous-pull is for a registry on loopback"}},
		{name: "TLS and authentication may serve every interface", opts: ociregistry.Options{Listen: "0.0.0.0:5001", TLSCertFile: tls.TLSCertFile, TLSKeyFile: tls.TLSKeyFile, HTPasswdFile: "users"}},
		{name: "a certificate needs its key", opts: ociregistry.Options{Listen: "127.0.0.1:5001", HTPasswdFile: "users", TLSCertFile: tls.TLSCertFile},
			wantError: []string{"--tls-cert-file and --tls-key-file go together"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tc.opts.Dir = "data"
			err := tc.opts.Validate()
			if len(tc.wantError) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			for _, want := range tc.wantError {
				g.Expect(err).To(MatchError(ContainSubstring(want)))
			}
			g.Expect(ociregistry.Serve(context.Background(), tc.opts)).To(MatchError(err.Error()), "Serve refuses what Validate refuses")
		})
	}
}

func TestTheHTPasswdFileTakesOnlyBcrypt(t *testing.T) {
	g := NewWithT(t)
	path := htpasswd(t)
	g.Expect(ociregistry.SetHTPasswdUser(path, "second", "another")).To(Succeed())
	g.Expect(ociregistry.SetHTPasswdUser(path, user, "changed")).To(Succeed())
	data, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	users, err := ociregistry.ParseHTPasswd(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(users).To(HaveLen(2))
	g.Expect(string(data)).NotTo(ContainSubstring("changed"))

	_, err = ociregistry.ParseHTPasswd([]byte("# users\nalice:$apr1$x$y\n"))
	g.Expect(err).To(MatchError(ContainSubstring(`line 2: user "alice": only bcrypt hashes`)))
	_, err = ociregistry.ParseHTPasswd([]byte("alice:plain"))
	g.Expect(err).To(MatchError(ContainSubstring("only bcrypt")))
	g.Expect(ociregistry.SetHTPasswdUser(path, "a:b", "x")).To(MatchError(ContainSubstring("without ':'")))

	empty := filepath.Join(t.TempDir(), "empty")
	g.Expect(os.WriteFile(empty, []byte("# nobody\n"), 0o600)).To(Succeed())
	_, err = ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir(), HTPasswdFile: empty})
	g.Expect(err).To(MatchError(ContainSubstring("has no users")))
}

// response is an HTTP response with its body read.
type response struct {
	*http.Response
	body string
}

// do sends one request and reads its answer.
func do(g Gomega, c *http.Client, method, url string, body []byte, headers map[string]string) *response {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	g.Expect(err).NotTo(HaveOccurred())
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return &response{Response: resp, body: string(data)}
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestServeServesTLSWithItsCertificateToItsUsers(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	ca, err := pki.NewCA("registry-ca")
	g.Expect(err).NotTo(HaveOccurred())
	serving, err := pki.NewServingCert(ca, "registry", []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	g.Expect(err).NotTo(HaveOccurred())
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	g.Expect(serving.WriteFiles(certFile, keyFile)).To(Succeed())
	addr := freeAddr(g)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ociregistry.Serve(ctx, ociregistry.Options{Listen: addr, Dir: filepath.Join(dir, "data"),
			TLSCertFile: certFile, TLSKeyFile: keyFile, HTPasswdFile: htpasswd(t)})
	}()
	defer func() {
		// A connection that never sends a request does not hold the shutdown up.
		spare, err := net.Dial("tcp", addr)
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = spare.Close() }()
		cancel()
		g.Eventually(done, 10*time.Second).Should(Receive(BeNil()))
	}()

	pool := x509.NewCertPool()
	g.Expect(pool.AppendCertsFromPEM(ca.CertPEM)).To(BeTrue())
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	img, err := random.Image(256, 1)
	g.Expect(err).NotTo(HaveOccurred())
	ref := mustRef(g, addr+"/flotilla/demo:v1")
	g.Eventually(func() error {
		return remote.Write(ref, img, remote.WithTransport(tr), remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())

	resp, err := http.Get("http://" + addr + "/v2/")
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), "plain HTTP is not served")
	_, err = remote.Image(ref, remote.WithTransport(&http.Transport{}), remote.WithAuth(&authn.Basic{Username: user, Password: password}))
	g.Expect(err).To(MatchError(ContainSubstring("certificate")), "a client that does not trust the CA does not send its credentials")
}

func freeAddr(g Gomega) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	return addr
}
