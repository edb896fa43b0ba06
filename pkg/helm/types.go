package helm

import (
	"errors"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/flotilla-dev/flotilla/pkg/postrender"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// ErrReleaseNotFound is returned by Get when the cluster has no such release.
var ErrReleaseNotFound = errors.New("helm release not found")

const (
	// ChartDigestKey names, as a chart annotation and a release label, the digest of the chart a
	// release was made from. The label value is the digest's hex cut to the 63 characters a label
	// value holds; the annotation holds the whole "sha256:<hex>".
	ChartDigestKey = "flotilla.dev/chart-digest"
	// ValuesHashKey names, as a chart annotation and a release label, the hash of the values a
	// release was made with (cut like ChartDigestKey for the label).
	ValuesHashKey = "flotilla.dev/values-hash"

	// DefaultMaxHistory is the number of revisions kept when Release.MaxHistory is 0.
	DefaultMaxHistory = 5
	// DefaultTimeout bounds an action when Release.Timeout is 0.
	DefaultTimeout = 5 * time.Minute
)

// Engine installs charts into clusters. The zero value is not usable: set ChartCache. An Engine
// is safe for concurrent use; calls for the same release are serialised.
type Engine struct {
	// ChartCache is a directory where pulled charts are kept by digest (content-addressed); a
	// cached chart is never pulled again.
	ChartCache string
	// Renderer renders charts' templates where their time and memory are bounded; nil renders
	// them in this process.
	Renderer ChartRenderer

	mu          sync.Mutex
	httpClients map[string]*http.Client
	clients     clientCache
	locks       keyedMutex
	stats       counters
}

// ChartCacheDir is Engine.ChartCache for a Flotilla home directory ($FLOTILLA_HOME): the manager's
// engine and the CLI's (addons diff) share it.
func ChartCacheDir(home string) string {
	return filepath.Join(home, "cache", "charts")
}

// FieldManager is the server-side apply field manager Helm writes a release's objects as:
// Helm's kube.ManagedFieldsManager when set, else the program's base name (as Helm decides).
// Whoever restores fields of a release's objects (drift correction) applies them as this
// manager, so later upgrades own them without conflicts.
func FieldManager() string {
	if kube.ManagedFieldsManager != "" {
		return kube.ManagedFieldsManager
	}
	if len(os.Args) == 0 || os.Args[0] == "" {
		return "unknown"
	}
	return filepath.Base(os.Args[0])
}

// ChartRef names a chart and a version of it.
type ChartRef struct {
	// RepoURL is "oci://host/path" (the chart is the last element, or Name is appended) or the
	// "http(s)://" URL of a classic chart repository (with an index.yaml).
	RepoURL string
	// Name is the chart's name.
	Name string
	// Version is an exact version, a semver range, or "" for the latest.
	Version string
	// Digest ("sha256:...") pins the chart: the OCI manifest digest, or the archive's SHA-256 in a
	// classic repository. It is verified after every pull.
	Digest string
}

// OCIChart is the chart at registry/repository (the chart's name is the repository's last
// element), as a curated package names it: version, pinned by digest.
func OCIChart(registry, repository, version, digest string) ChartRef {
	return ChartRef{
		RepoURL: "oci://" + strings.TrimSuffix(registry, "/") + "/" + strings.Trim(repository, "/"),
		Name:    path.Base(repository),
		Version: version,
		Digest:  digest,
	}
}

// Release is the desired state of one Helm release.
type Release struct {
	Name, Namespace string
	Chart           ChartRef
	Registry        registryconn.Config
	Values          map[string]any
	// CreateNamespace creates the release namespace when it does not exist.
	CreateNamespace bool
	// Wait waits until the release's resources are ready (Helm's status watcher).
	Wait bool
	// Atomic rolls a failed install or upgrade back (uninstalls a failed install).
	Atomic bool
	// SkipCRDs does not install the CRDs in the chart's crds/ directory.
	SkipCRDs bool
	// Timeout bounds the action and its waiting; DefaultTimeout when 0.
	Timeout time.Duration
	// MaxHistory is the number of revisions kept; DefaultMaxHistory when 0.
	MaxHistory int
	// PostRender changes the rendered manifests before they are applied (kustomize patches,
	// images, labels); the release records the changed manifest, and its values hash covers it.
	PostRender postrender.Spec
	// Labels are stored on the Helm release (e.g. owner references of the caller). They are
	// written when the release is installed or upgraded: a change of labels alone does not
	// upgrade. Helm's own label names (name, owner, status, version, ...) are refused.
	Labels map[string]string
}

// Action is what InstallOrUpgrade did. (The constants are prefixed because Installed names the
// type Get returns.)
type Action string

const (
	// ActionInstalled means a new release was installed.
	ActionInstalled Action = "Installed"
	// ActionUpgraded means a new revision of an existing release was made.
	ActionUpgraded Action = "Upgraded"
	// ActionUnchanged means the deployed release already had the chart and values: nothing was
	// written.
	ActionUnchanged Action = "Unchanged"
)

// Result reports what InstallOrUpgrade did and the release it left.
type Result struct {
	Action   Action
	Revision int
	// Status is Helm's release status, e.g. "deployed".
	Status                                string
	ChartVersion, ChartDigest, ValuesHash string
	// Objects are the objects of the release's manifest, as in Installed: callers that look at
	// the live objects (health, drift) need not read the release back.
	Objects []*unstructured.Unstructured
}

// Installed is a release as the cluster records it (its latest revision).
type Installed struct {
	Name, Namespace string
	Revision        int
	// Status is Helm's release status, e.g. "deployed" or "failed".
	Status string
	// Description is Helm's description of the last action, e.g. its error.
	Description                                      string
	ChartName, ChartVersion, ChartDigest, ValuesHash string
	// Values are the values the release was made with (the caller's, not merged with defaults).
	Values map[string]any
	// Labels are the release's labels, the caller's and Flotilla's.
	Labels map[string]string
	// Manifest is the rendered manifest applied to the cluster.
	Manifest string
	// Objects are the manifest's objects; namespaced objects without a namespace get the
	// release namespace.
	Objects []*unstructured.Unstructured
}

// ChartInfo describes a chart.
type ChartInfo struct {
	Name, Version, AppVersion, Description string
	// Digest is the chart's digest in the cache (see ChartRef.Digest).
	Digest string
	// ValuesSchema is the chart's values.schema.json, nil when it has none.
	ValuesSchema []byte
	// Values are the chart's default values.
	Values map[string]any
	// Dependencies are the chart's declared dependencies.
	Dependencies []Dependency
}

// Dependency is a chart dependency declared in Chart.yaml.
type Dependency struct {
	Name, Version, Repository string
}

// Stats counts what an Engine did since it was created.
type Stats struct {
	// ChartPulls is the number of chart downloads (OCI pulls and archive downloads).
	ChartPulls int64
	// ChartCacheHits is the number of charts served from the cache.
	ChartCacheHits int64
	// SourceLookups is the number of metadata requests to chart sources: OCI tag lists and tag
	// resolutions (HEAD), and index.yaml downloads.
	SourceLookups int64
	// Installs, Upgrades and Unchanged count InstallOrUpgrade outcomes.
	Installs, Upgrades, Unchanged int64
	// Uninstalls counts releases removed by Uninstall.
	Uninstalls int64
	// Recoveries counts releases found stuck (pending, uninstalling) or with a failed first
	// install, and repaired.
	Recoveries int64
}

type counters struct {
	pulls, cacheHits, lookups, installs, upgrades, unchanged, uninstalls, recoveries atomic.Int64
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	return Stats{
		ChartPulls:     e.stats.pulls.Load(),
		ChartCacheHits: e.stats.cacheHits.Load(),
		SourceLookups:  e.stats.lookups.Load(),
		Installs:       e.stats.installs.Load(),
		Upgrades:       e.stats.upgrades.Load(),
		Unchanged:      e.stats.unchanged.Load(),
		Uninstalls:     e.stats.uninstalls.Load(),
		Recoveries:     e.stats.recoveries.Load(),
	}
}

// keyedMutex serialises work per key.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	sync.Mutex
	users int
}

func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	if k.locks == nil {
		k.locks = map[string]*keyedLock{}
	}
	l, ok := k.locks[key]
	if !ok {
		l = &keyedLock{}
		k.locks[key] = l
	}
	l.users++
	k.mu.Unlock()

	l.Lock()
	return func() {
		l.Unlock()
		k.mu.Lock()
		l.users--
		if l.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
