package helm

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/registry"

	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// TestChartsComeFromRegistriesAndRepositories resolves charts by tag, range, latest and digest
// from the OCI registry and a classic repository, pulling each digest once.
func TestChartsComeFromRegistriesAndRepositories(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	d1 := helloChart("0.1.0").push(t, "sources")
	d2 := helloChart("0.2.0").push(t, "sources")
	helloChart("1.0.0-rc.1").push(t, "sources")
	dBuild := helloChart("1.0.0+build.7").push(t, "sources-build")
	repoURL := serveRepository(t, false, helloChart("0.1.0"), helloChart("0.2.0"))
	oci := registryconn.Config{PlainHTTP: true}
	e := newEngine(t)

	tests := []struct {
		name        string
		ref         ChartRef
		reg         registryconn.Config
		wantVersion string
		wantDigest  string
	}{
		{"an exact OCI tag", ChartRef{RepoURL: "oci://" + ociHost + "/sources/hello", Version: "0.1.0"}, oci, "0.1.0", d1},
		{"the latest stable OCI version", ChartRef{RepoURL: "oci://" + ociHost + "/sources", Name: "hello"}, oci, "0.2.0", d2},
		{"an OCI semver range", ChartRef{RepoURL: "oci://" + ociHost + "/sources", Name: "hello", Version: "~0.1"}, oci, "0.1.0", d1},
		{"an OCI tag with build metadata", ChartRef{RepoURL: "oci://" + ociHost + "/sources-build/hello", Version: "1.0.0+build.7"}, oci, "1.0.0+build.7", dBuild},
		{"an OCI digest", ChartRef{RepoURL: "oci://" + ociHost + "/sources", Name: "hello", Digest: d2}, oci, "0.2.0", d2},
		{"the latest version of a classic repository", ChartRef{RepoURL: repoURL, Name: "hello"}, registryconn.Config{}, "0.2.0", ""},
		{"a range in a classic repository", ChartRef{RepoURL: repoURL + "/", Name: "hello", Version: "<0.2.0"}, registryconn.Config{}, "0.1.0", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, info, err := e.Template(ctx, Release{Chart: tt.ref, Registry: tt.reg, Values: map[string]any{"greeting": "hi"}})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(info.Version).To(Equal(tt.wantVersion))
			g.Expect(info.Digest).To(HavePrefix("sha256:"))
			if tt.wantDigest != "" {
				g.Expect(info.Digest).To(Equal(tt.wantDigest))
			}
		})
	}
	// d1, d2, dBuild from the registry, 0.2.0 and 0.1.0 from the repository.
	g.Expect(e.Stats().ChartPulls).To(Equal(int64(5)))

	// A second round is served from the cache.
	for _, tt := range tests {
		_, _, err := e.Template(ctx, Release{Chart: tt.ref, Registry: tt.reg})
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(e.Stats().ChartPulls).To(Equal(int64(5)))

	// A pinned, cached digest needs no registry at all.
	offline := &Engine{ChartCache: e.ChartCache}
	_, info, err := offline.Template(ctx, Release{Chart: ChartRef{RepoURL: "oci://127.0.0.1:1/gone", Name: "hello", Digest: d1}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Version).To(Equal("0.1.0"))
	g.Expect(offline.Stats().ChartPulls).To(BeZero())
	g.Expect(offline.Stats().SourceLookups).To(BeZero())
}

// TestTemplateRendersWithoutACluster renders values into the manifest and returns the chart's
// schema and dependencies.
func TestTemplateRendersWithoutACluster(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	helloChart("0.1.0").push(t, "template")
	parentChart().push(t, "template")
	e := newEngine(t)

	manifest, info, err := e.Template(ctx, Release{Name: "r", Namespace: "n",
		Chart:    ChartRef{RepoURL: "oci://" + ociHost + "/template/hello", Version: "0.1.0"},
		Registry: registryconn.Config{PlainHTTP: true}, Values: map[string]any{"greeting": "templated"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(manifest).To(ContainSubstring(`greeting: "templated"`))
	g.Expect(manifest).To(ContainSubstring("name: r-config"))
	g.Expect(string(info.ValuesSchema)).To(ContainSubstring(`"greeting": {"type": "string"}`))
	g.Expect(info.Values).To(HaveKeyWithValue("greeting", "hello"))

	_, info, err = e.Template(ctx, Release{Chart: ChartRef{RepoURL: "oci://" + ociHost + "/template/parent", Version: "1.0.0"},
		Registry: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Dependencies).To(ConsistOf(Dependency{Name: "child", Version: "0.1.0"}))

	_, _, err = e.Template(ctx, Release{Chart: ChartRef{RepoURL: "oci://" + ociHost + "/template/hello", Version: "0.1.0"},
		Registry: registryconn.Config{PlainHTTP: true}, Values: map[string]any{"replicas": "many"}})
	g.Expect(err).To(MatchError(ContainSubstring("replicas")), "the chart's schema rejects the values")
}

// TestAChartThatIsNotThePinnedOneIsRefused covers the ways a chart can differ from its pin.
func TestAChartThatIsNotThePinnedOneIsRefused(t *testing.T) {
	ctx := testContext(t)
	helloChart("0.1.0").push(t, "pinned")
	d2 := helloChart("0.2.0").push(t, "pinned")
	good := serveRepository(t, false, helloChart("0.1.0"))
	corrupt := serveRepository(t, true, helloChart("0.1.0"))
	oci := registryconn.Config{PlainHTTP: true}

	tests := []struct {
		name string
		ref  ChartRef
		reg  registryconn.Config
	}{
		{"an OCI digest of another version than the one asked for", ChartRef{RepoURL: "oci://" + ociHost + "/pinned/hello", Version: "0.1.0", Digest: d2}, oci},
		{"an archive whose digest is not the one its index lists", ChartRef{RepoURL: corrupt, Name: "hello", Version: "0.1.0"}, registryconn.Config{}},
		{"an archive whose digest is not the pinned one", ChartRef{RepoURL: good, Name: "hello", Version: "0.1.0", Digest: d2}, registryconn.Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := newEngine(t)
			_, err := e.InstallOrUpgrade(ctx, cluster, Release{Name: "pinned", Namespace: "default", Chart: tt.ref, Registry: tt.reg})
			g.Expect(err).To(MatchError(ErrDigestMismatch))
			_, err = e.Get(ctx, cluster, "pinned", "default")
			g.Expect(err).To(MatchError(ErrReleaseNotFound), "nothing was installed")
		})
	}
}

// TestConcurrentCallersPullAChartOnce resolves one chart from many goroutines.
func TestConcurrentCallersPullAChartOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	digest := helloChart("0.1.0").push(t, "concurrent")
	e := newEngine(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			_, _, err := e.Template(ctx, Release{Chart: ChartRef{RepoURL: "oci://" + ociHost + "/concurrent/hello", Digest: digest},
				Registry: registryconn.Config{PlainHTTP: true}})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(e.Stats().ChartPulls).To(Equal(int64(1)))
	entries, err := os.ReadDir(filepath.Join(e.ChartCache, "sha256"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(entries).To(HaveLen(2), "one archive and its record, no temporary files")

	// A corrupt cached archive is dropped and pulled again.
	archive, _ := e.cachePaths(digest)
	g.Expect(os.WriteFile(archive, []byte("garbage"), 0o600)).To(Succeed())
	_, _, err = e.Template(ctx, Release{Chart: ChartRef{RepoURL: "oci://" + ociHost + "/concurrent/hello", Digest: digest}, Registry: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).To(MatchError(ContainSubstring("corrupt")))
	_, _, err = e.Template(ctx, Release{Chart: ChartRef{RepoURL: "oci://" + ociHost + "/concurrent/hello", Digest: digest}, Registry: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.Stats().ChartPulls).To(Equal(int64(2)))
}

func TestLabelValueFitsALabel(t *testing.T) {
	g := NewWithT(t)
	v := labelValue("sha256:" + strings.Repeat("a", 64))
	g.Expect(v).To(HaveLen(63))
	g.Expect(v).NotTo(ContainSubstring(":"))
}

func TestValuesHashIsCanonical(t *testing.T) {
	g := NewWithT(t)
	a, err := ValuesHash(map[string]any{"a": 1, "b": map[string]any{"x": "y", "n": int64(2)}})
	g.Expect(err).NotTo(HaveOccurred())
	b, err := ValuesHash(map[string]any{"b": map[string]any{"n": 2.0, "x": "y"}, "a": float64(1)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).To(Equal(b), "key order and numeric Go types do not change the hash")
	empty, _ := ValuesHash(nil)
	emptyMap, _ := ValuesHash(map[string]any{})
	g.Expect(empty).To(Equal(emptyMap))
	c, _ := ValuesHash(map[string]any{"a": 2})
	g.Expect(c).NotTo(Equal(a))
}

// TestPrivateSourcesNeedTheirCredentialsAndCA serves a registry and a repository over TLS with
// a private CA and basic auth.
func TestPrivateSourcesNeedTheirCredentialsAndCA(t *testing.T) {
	ctx := testContext(t)
	const user, password = "fleet", "s3cret-pa55"
	regSrv := httptest.NewTLSServer(basicAuth(user, password, ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(regSrv.Close)
	repoSrv := httptest.NewTLSServer(basicAuth(user, password, http.FileServer(http.Dir(repositoryDir(t, false, helloChart("0.3.0"))))))
	t.Cleanup(repoSrv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: regSrv.Certificate().Raw})
	repoCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: repoSrv.Certificate().Raw})

	pusher, err := registry.NewClient(registry.ClientOptHTTPClient(regSrv.Client()), registry.ClientOptBasicAuth(user, password),
		registry.ClientOptWriter(io.Discard), registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "creds.json")))
	must(t, err)
	regHost := strings.TrimPrefix(regSrv.URL, "https://")
	_, err = pusher.Push(helloChart("0.3.0").archive(t), regHost+"/private/hello:0.3.0")
	must(t, err)

	oci := ChartRef{RepoURL: "oci://" + regHost + "/private/hello", Version: "0.3.0"}
	classic := ChartRef{RepoURL: repoSrv.URL, Name: "hello", Version: "0.3.0"}
	tests := []struct {
		name    string
		ref     ChartRef
		reg     registryconn.Config
		wantErr string
	}{
		{"OCI with credentials and the CA", oci, registryconn.Config{Username: user, Password: password, CAData: ca}, ""},
		{"OCI without trusting the CA", oci, registryconn.Config{Username: user, Password: password}, "certificate"},
		{"OCI skipping TLS verification", oci, registryconn.Config{Username: user, Password: password, InsecureSkipTLSVerify: true}, ""},
		{"OCI with a wrong password", oci, registryconn.Config{Username: user, Password: "wrong-pa55", CAData: ca}, "401"},
		{"a repository with credentials and the CA", classic, registryconn.Config{Username: user, Password: password, CAData: repoCA}, ""},
		{"a repository without credentials", classic, registryconn.Config{CAData: repoCA}, "401"},
		{"a repository without trusting the CA", classic, registryconn.Config{Username: user, Password: password}, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e := newEngine(t)
			_, info, err := e.Template(ctx, Release{Chart: tt.ref, Registry: tt.reg})
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(info.Version).To(Equal("0.3.0"))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			t.Log(err)
			g.Expect(err.Error()).NotTo(ContainSubstring("pa55"), "no password in errors")
		})
	}
}

// TestAHangingSourceDoesNotHangTheCaller cancels through the caller's context, also for Helm's
// registry client, which takes none.
func TestAHangingSourceDoesNotHangTheCaller(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	host := strings.TrimPrefix(hang.URL, "http://")
	for _, ref := range []ChartRef{
		{RepoURL: "oci://" + host + "/charts/hello", Version: "0.1.0"},
		{RepoURL: "oci://" + host + "/charts/hello", Digest: "sha256:" + strings.Repeat("a", 64)},
		{RepoURL: hang.URL, Name: "hello"},
	} {
		t.Run(ref.RepoURL+ref.Digest, func(t *testing.T) {
			g := NewWithT(t)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, _, err := newEngine(t).Template(ctx, Release{Chart: ref, Registry: registryconn.Config{PlainHTTP: true}})
			g.Expect(err).To(MatchError(ContainSubstring("context deadline exceeded")))
			g.Expect(time.Since(start)).To(BeNumerically("<", 5*time.Second))
		})
	}
}

func TestRepositoryCredentialsStayOnTheRepositorysHost(t *testing.T) {
	g := NewWithT(t)
	reg := registryconn.Config{Username: "u", Password: "p"}
	g.Expect(credentialsFor("https://charts.example/hello-1.0.0.tgz", "https://charts.example", reg).Password).To(Equal("p"))
	g.Expect(credentialsFor("https://charts.example/sub/hello-1.0.0.tgz", "https://charts.example/sub/", reg).Username).To(Equal("u"))
	g.Expect(credentialsFor("https://cdn.example/hello-1.0.0.tgz", "https://charts.example", reg).Password).To(BeEmpty())
	g.Expect(credentialsFor("http://charts.example/hello-1.0.0.tgz", "https://charts.example", reg).Password).To(BeEmpty())
}

// With a mirror, a chart is pulled from the mirror only, by tag or digest, and a classic
// repository is refused: the original registry (here a port nothing listens on) is never asked.
func TestAMirrorServesEveryChartPull(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	d := helloChart("0.3.0").push(t, "mirror-prefix/team/charts")
	reg := registryconn.Config{Username: "origin", Password: "origin-secret",
		Mirror: &registryconn.Mirror{Registry: ociHost + "/mirror-prefix", Connection: registryconn.Config{PlainHTTP: true}}}
	e := newEngine(t)

	for _, ref := range []ChartRef{
		{RepoURL: "oci://127.0.0.1:1/team/charts", Name: "hello", Version: "0.3.0"},
		{RepoURL: "oci://127.0.0.1:1/team/charts/hello", Digest: d},
	} {
		_, info, err := e.Template(ctx, Release{Chart: ref, Registry: reg})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Digest).To(Equal(d))
	}
	repoURL := serveRepository(t, false, helloChart("0.1.0"))
	_, _, err := e.Template(ctx, Release{Chart: ChartRef{RepoURL: repoURL, Name: "hello"}, Registry: reg})
	g.Expect(err).To(MatchError(ContainSubstring("is not an OCI registry, and every chart is pulled from the registry mirror " + ociHost + "/mirror-prefix")))
}

func TestExactVersion(t *testing.T) {
	for version, want := range map[string]bool{
		"1.2.3": true, "1.2.3-rc.1": true, "": false, "1.2": false, "^1.2.0": false, ">=1.0.0 <2.0.0": false, "1.x": false,
	} {
		NewWithT(t).Expect(ExactVersion(version)).To(Equal(want), version)
	}
}
