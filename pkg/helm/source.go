package helm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"oras.land/oras-go/v2/registry/remote/auth"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// ErrDigestMismatch is returned when a chart's content does not match the digest it was pinned
// to (or that its repository index announces). Such a chart is never cached or installed.
var ErrDigestMismatch = errors.New("chart digest mismatch")

// sourceTimeout bounds one request to a chart source; the Helm registry client takes no context.
const sourceTimeout = 2 * time.Minute

var digestPattern = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// localChart is a chart in the cache.
type localChart struct {
	// Digest is the OCI manifest digest, or the archive's SHA-256 for classic repositories.
	Digest string
	Name   string
	// Version is the chart's version.
	Version string
	path    string
}

// cacheRecord is written next to a cached archive; its presence marks the archive complete.
type cacheRecord struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// ArchiveDigest is the SHA-256 of the archive file, checked on every load.
	ArchiveDigest string `json:"archiveDigest"`
}

// resolveChart returns ref as a chart in the cache, pulling it when the digest it resolves to
// is not there yet.
func (e *Engine) resolveChart(ctx context.Context, ref ChartRef, reg registryconn.Config) (*localChart, error) {
	if e.ChartCache == "" {
		return nil, errors.New("the Helm engine has no chart cache directory (Engine.ChartCache)")
	}
	if ref.Digest != "" && !digestPattern.MatchString(ref.Digest) {
		return nil, fmt.Errorf("chart digest %q is not of the form sha256:<64 hex digits>", ref.Digest)
	}
	ref, reg, err := mirrored(ref, reg)
	if err != nil {
		return nil, err
	}
	switch {
	case registry.IsOCI(ref.RepoURL):
		return e.resolveOCI(ctx, ref, reg)
	case strings.HasPrefix(ref.RepoURL, "https://"), strings.HasPrefix(ref.RepoURL, "http://"):
		return e.resolveRepository(ctx, ref, reg)
	case ref.RepoURL == "":
		return nil, errors.New("chart has no repository URL")
	default:
		return nil, fmt.Errorf("chart repository URL %q is neither oci:// nor http(s)://", ref.RepoURL)
	}
}

// mirrored is ref and reg with reg's mirror applied (registryconn.Config.Route): an OCI chart is
// pulled from the mirror, with the mirror's connection. A classic repository cannot be mirrored
// (a mirror is an OCI registry), so with a mirror set it is refused rather than reached.
func mirrored(ref ChartRef, reg registryconn.Config) (ChartRef, registryconn.Config, error) {
	if reg.Mirror == nil {
		return ref, reg, nil
	}
	if !registry.IsOCI(ref.RepoURL) {
		return ref, reg, fmt.Errorf("chart repository %s is not an OCI registry, and every chart is pulled from the registry mirror %s, which holds OCI charts only: push the chart to an OCI registry and import it into the mirror (flotilla packages import)",
			ref.RepoURL, reg.Mirror.Registry)
	}
	host, repository, _ := strings.Cut(strings.TrimPrefix(ref.RepoURL, registry.OCIScheme+"://"), "/")
	host, repository, reg = reg.Route(host, repository)
	ref.RepoURL = strings.TrimSuffix(registry.OCIScheme+"://"+host+"/"+repository, "/")
	return ref, reg, nil
}

// ociRepository is the registry repository of ref, without the oci:// scheme: the chart name is
// appended unless the URL already ends with it.
func ociRepository(ref ChartRef) string {
	r := strings.TrimSuffix(strings.TrimPrefix(ref.RepoURL, registry.OCIScheme+"://"), "/")
	if ref.Name != "" && path.Base(r) != ref.Name {
		r += "/" + ref.Name
	}
	return r
}

// ExactVersion reports whether version names one chart version (strict semver: not a range,
// not "1.2", not "" for the latest), which resolves without listing the repository's versions
// and never changes.
func ExactVersion(v string) bool {
	_, err := semver.StrictNewVersion(v)
	return err == nil
}

func (e *Engine) resolveOCI(ctx context.Context, ref ChartRef, reg registryconn.Config) (*localChart, error) {
	repository := ociRepository(ref)
	digest := ref.Digest
	var client *registry.Client
	if digest == "" {
		var err error
		if client, err = e.registryClient(ctx, reg); err != nil {
			return nil, err
		}
		tag := ref.Version
		if !ExactVersion(tag) {
			e.stats.lookups.Add(1)
			tags, err := client.Tags(repository)
			if err != nil {
				return nil, fmt.Errorf("listing the versions of chart %s: %w", repository, err)
			}
			if tag, err = registry.GetTagMatchingVersionOrConstraint(tags, ref.Version); err != nil {
				return nil, fmt.Errorf("chart %s: %w", repository, err)
			}
		}
		// Registries hold "+" of semver build metadata as "_" (Helm pushes it so).
		tag = strings.ReplaceAll(tag, "+", "_")
		e.stats.lookups.Add(1)
		desc, err := client.Resolve(repository + ":" + tag)
		if err != nil {
			return nil, fmt.Errorf("resolving chart %s:%s: %w", repository, tag, err)
		}
		digest = desc.Digest.String()
	}

	unlock := e.locks.lock("chart/" + digest)
	defer unlock()
	if c, err := e.fromCache(digest, ref); err != nil || c != nil {
		return c, err
	}

	if client == nil {
		var err error
		if client, err = e.registryClient(ctx, reg); err != nil {
			return nil, err
		}
	}
	e.stats.pulls.Add(1)
	res, err := client.Pull(repository + "@" + digest)
	if err != nil {
		return nil, fmt.Errorf("pulling chart %s@%s: %w", repository, digest, err)
	}
	if res.Manifest.Digest != digest {
		return nil, fmt.Errorf("%w: %s@%s has manifest digest %s", ErrDigestMismatch, repository, digest, res.Manifest.Digest)
	}
	if got := sha256Digest(res.Chart.Data); got != res.Chart.Digest {
		return nil, fmt.Errorf("%w: the chart layer of %s@%s is %s, its manifest says %s", ErrDigestMismatch, repository, digest, got, res.Chart.Digest)
	}
	return e.store(digest, res.Chart.Data, ref)
}

func (e *Engine) resolveRepository(ctx context.Context, ref ChartRef, reg registryconn.Config) (*localChart, error) {
	if ref.Name == "" {
		return nil, fmt.Errorf("chart repository %s: no chart name", ref.RepoURL)
	}
	httpClient, err := e.httpClient(reg)
	if err != nil {
		return nil, err
	}
	indexURL := strings.TrimSuffix(ref.RepoURL, "/") + "/index.yaml"
	e.stats.lookups.Add(1)
	data, err := download(ctx, httpClient, indexURL, reg)
	if err != nil {
		return nil, fmt.Errorf("reading the index of chart repository %s: %w", ref.RepoURL, err)
	}
	var index repo.IndexFile
	if err := yaml.Unmarshal(data, &index); err != nil {
		return nil, fmt.Errorf("reading the index of chart repository %s: %w", ref.RepoURL, err)
	}
	index.SortEntries()
	cv, err := index.Get(ref.Name, ref.Version)
	if err != nil {
		return nil, fmt.Errorf("chart %s version %q in repository %s: %w", ref.Name, ref.Version, ref.RepoURL, err)
	}
	if len(cv.URLs) == 0 {
		return nil, fmt.Errorf("chart %s %s in repository %s has no download URL", ref.Name, cv.Version, ref.RepoURL)
	}
	chartURL, err := repo.ResolveReferenceURL(ref.RepoURL, cv.URLs[0])
	if err != nil {
		return nil, err
	}

	expected := ""
	if cv.Digest != "" {
		expected = "sha256:" + strings.TrimPrefix(cv.Digest, "sha256:")
	}
	if ref.Digest != "" {
		if expected != "" && expected != ref.Digest {
			return nil, fmt.Errorf("%w: repository %s lists %s %s with digest %s, not the pinned %s", ErrDigestMismatch, ref.RepoURL, ref.Name, cv.Version, expected, ref.Digest)
		}
		expected = ref.Digest
	}
	urlRecord := filepath.Join(e.ChartCache, "urls", sha256Hex([]byte(chartURL)))
	if expected == "" {
		// No digest announced: the archive at a URL is taken to be immutable, as Helm does.
		if known, err := readCacheFile(urlRecord); err == nil && digestPattern.Match(known) {
			expected = string(known)
		}
	}

	if expected != "" {
		unlock := e.locks.lock("chart/" + expected)
		defer unlock()
		if c, err := e.fromCache(expected, ref); err != nil || c != nil {
			return c, err
		}
	}

	e.stats.pulls.Add(1)
	archive, err := download(ctx, httpClient, chartURL, credentialsFor(chartURL, ref.RepoURL, reg))
	if err != nil {
		return nil, fmt.Errorf("downloading chart %s %s: %w", ref.Name, cv.Version, err)
	}
	digest := sha256Digest(archive)
	if expected != "" && digest != expected {
		return nil, fmt.Errorf("%w: %s is %s, expected %s", ErrDigestMismatch, chartURL, digest, expected)
	}
	c, err := e.store(digest, archive, ref)
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(urlRecord, []byte(digest)); err != nil {
		return nil, err
	}
	return c, nil
}

// credentialsFor returns reg for a URL on the repository's host, and reg without credentials for
// a URL elsewhere (an index may point anywhere; the credentials are the repository's).
func credentialsFor(target, repoURL string, reg registryconn.Config) registryconn.Config {
	t, err1 := url.Parse(target)
	r, err2 := url.Parse(repoURL)
	if err1 != nil || err2 != nil || t.Scheme != r.Scheme || t.Host != r.Host {
		reg.Username, reg.Password = "", ""
	}
	return reg
}

// checkChart refuses a chart that is not the one ref names.
func checkChart(name, version string, ref ChartRef) error {
	if ref.Name != "" && name != ref.Name {
		return fmt.Errorf("%w: the chart is %s, not %s", ErrDigestMismatch, name, ref.Name)
	}
	if ExactVersion(ref.Version) && version != ref.Version {
		return fmt.Errorf("%w: chart %s is version %s, not the requested %s", ErrDigestMismatch, name, version, ref.Version)
	}
	return nil
}

func (e *Engine) cachePaths(digest string) (archive, record string) {
	base := filepath.Join(e.ChartCache, "sha256", strings.TrimPrefix(digest, "sha256:"))
	return base + ".tgz", base + ".json"
}

// fromCache returns the chart stored under digest (nil when there is none), refusing one that is
// not the chart ref asks for.
func (e *Engine) fromCache(digest string, ref ChartRef) (*localChart, error) {
	c, err := e.cached(digest)
	if err != nil || c == nil {
		return nil, err
	}
	if err := checkChart(c.Name, c.Version, ref); err != nil {
		return nil, err
	}
	e.stats.cacheHits.Add(1)
	return c, nil
}

// cached returns the chart stored under digest, or nil when there is none.
func (e *Engine) cached(digest string) (*localChart, error) {
	archive, record := e.cachePaths(digest)
	data, err := readCacheFile(record)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the chart cache: %w", err)
	}
	var rec cacheRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		// A record that does not parse is treated as absent: the chart is pulled again.
		return nil, nil //nolint:nilerr // a broken cache entry is a miss, not a failure
	}
	if _, err := os.Stat(archive); err != nil {
		return nil, nil //nolint:nilerr // a missing archive is a miss, not a failure
	}
	return &localChart{Digest: digest, Name: rec.Name, Version: rec.Version, path: archive}, nil
}

// store checks that archive is a chart and the one ref asks for, and writes it to the cache.
func (e *Engine) store(digest string, archive []byte, ref ChartRef) (*localChart, error) {
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", digest, err)
	}
	if err := checkChart(ch.Name(), ch.Metadata.Version, ref); err != nil {
		return nil, err
	}
	path, record := e.cachePaths(digest)
	if err := atomicfile.Write(path, archive); err != nil {
		return nil, err
	}
	rec, err := json.Marshal(cacheRecord{Name: ch.Name(), Version: ch.Metadata.Version, ArchiveDigest: sha256Digest(archive)})
	if err != nil {
		return nil, err
	}
	if err := atomicfile.Write(record, rec); err != nil {
		return nil, err
	}
	return &localChart{Digest: digest, Name: ch.Name(), Version: ch.Metadata.Version, path: path}, nil
}

// load reads a cached chart, checking the archive against its record.
func (e *Engine) load(c *localChart) (*chart.Chart, []byte, error) {
	archive, err := readCacheFile(c.path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading cached chart %s: %w", c.Digest, err)
	}
	_, recordPath := e.cachePaths(c.Digest)
	data, err := readCacheFile(recordPath)
	if err != nil {
		return nil, nil, fmt.Errorf("reading cached chart %s: %w", c.Digest, err)
	}
	var rec cacheRecord
	if err := json.Unmarshal(data, &rec); err != nil || rec.ArchiveDigest != sha256Digest(archive) {
		// Corrupt on disk: drop it, so the next call pulls it again.
		_ = os.Remove(recordPath)
		return nil, nil, fmt.Errorf("cached chart %s is corrupt and was removed; it is pulled again on the next attempt", c.Digest)
	}
	ch, err := loader.LoadArchive(bytes.NewReader(archive))
	if err != nil {
		return nil, nil, fmt.Errorf("loading chart %s: %w", c.Digest, err)
	}
	return ch, archive, nil
}

// registryClient is a Helm registry client for reg's credentials and transport. Credentials come
// from reg only: the authorizer is ours, so Helm's and Docker's credential files of the user
// running Flotilla are never consulted.
func (e *Engine) registryClient(ctx context.Context, reg registryconn.Config) (*registry.Client, error) {
	shared, err := e.httpClient(reg)
	if err != nil {
		return nil, err
	}
	// Helm's registry client takes no context; its requests get ours through the transport.
	httpClient := &http.Client{Transport: contextTransport{ctx: ctx, next: shared.Transport}, Timeout: shared.Timeout}
	authorizer := auth.Client{Client: httpClient, Cache: auth.NewCache()}
	authorizer.SetUserAgent("flotilla")
	credential := auth.EmptyCredential
	if reg.Username != "" || reg.Password != "" {
		credential = auth.Credential{Username: reg.Username, Password: reg.Password}
	}
	authorizer.Credential = func(context.Context, string) (auth.Credential, error) { return credential, nil }
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(httpClient),
		registry.ClientOptAuthorizer(authorizer),
		registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(e.ChartCache, "registry-credentials.json")),
	}
	if reg.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating a registry client: %w", err)
	}
	return c, nil
}

// httpClient returns an HTTP client with reg's TLS settings (its CA trusted besides the system's).
func (e *Engine) httpClient(reg registryconn.Config) (*http.Client, error) {
	key := fmt.Sprintf("%t/%s", reg.InsecureSkipTLSVerify, sha256Hex(reg.CAData))
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.httpClients[key]; ok {
		return c, nil
	}
	tlsConfig, err := reg.TLSConfig()
	if err != nil {
		return nil, err
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = tlsConfig
	c := &http.Client{Transport: transport, Timeout: sourceTimeout}
	if e.httpClients == nil {
		e.httpClients = map[string]*http.Client{}
	}
	e.httpClients[key] = c
	return c, nil
}

// contextTransport sends requests with a caller's context, so that cancelling the caller cancels
// the requests of clients that use context.Background.
type contextTransport struct {
	ctx  context.Context //nolint:containedctx // the context of the one call this transport serves
	next http.RoundTripper
}

func (t contextTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.next.RoundTrip(req.WithContext(t.ctx))
}

// download GETs url with reg's basic-auth credentials.
func download(ctx context.Context, c *http.Client, url string, reg registryconn.Config) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	if reg.Username != "" || reg.Password != "" {
		req.SetBasicAuth(reg.Username, reg.Password)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxDownload))
}

// maxDownload bounds what is read from a chart source (Helm's own limit for archives is 100 MiB).
const maxDownload = 100 << 20

// readCacheFile reads a file of the chart cache; its paths are built from digests, never from
// names a user chose.
func readCacheFile(path string) ([]byte, error) {
	return os.ReadFile(filepath.Clean(path))
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func sha256Digest(data []byte) string { return "sha256:" + sha256Hex(data) }
