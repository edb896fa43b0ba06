package helm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"helm.sh/helm/v4/pkg/action"
	ci "helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/kube"
	"helm.sh/helm/v4/pkg/postrenderer"
	ri "helm.sh/helm/v4/pkg/release"
	rcommon "helm.sh/helm/v4/pkg/release/common"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/storage"
	"helm.sh/helm/v4/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/pkg/helm/releasestore"
	"github.com/flotilla-dev/flotilla/pkg/postrender"
)

// InstallOrUpgrade makes the release r in the cluster cfg what r asks for. It installs an absent
// release, upgrades one whose chart digest or values hash differs from the deployed release's,
// and otherwise returns ActionUnchanged without writing to the cluster (and without pulling,
// when the chart is cached). A release left stuck by a process that died is repaired first (see
// the package comment).
//
// ctx bounds the preparation (pulling, reading the release). Once Helm has started to install or
// upgrade, the action runs to its end, bounded by r.Timeout, even when ctx is cancelled: Helm
// would otherwise go on in the background after the call returned, and the next call would find
// the release pending behind a live action.
func (e *Engine) InstallOrUpgrade(ctx context.Context, cfg *rest.Config, r Release) (Result, error) {
	if err := validateName(r.Name, r.Namespace); err != nil {
		return Result{}, err
	}
	values, hash, err := normalizeValues(r.Values)
	if err != nil {
		return Result{}, err
	}
	hash = foldPostRender(hash, r.PostRender)
	unlock := e.locks.lock(releaseKey(cfg, r.Namespace, r.Name))
	defer unlock()

	ac, err := e.actionConfig(ctx, cfg, r.Namespace)
	if err != nil {
		return Result{}, err
	}
	src, err := e.resolveChart(ctx, r.Chart, r.Registry)
	if err != nil {
		return Result{}, err
	}
	last, err := lastRelease(ac, r.Name)
	if err != nil {
		return Result{}, fmt.Errorf("reading release %s/%s: %w", r.Namespace, r.Name, err)
	}
	if last != nil {
		if last, err = e.recoverStuck(ctx, ac, last); err != nil {
			return Result{}, err
		}
	}
	clients, err := e.clients.clientsFor(cfg)
	if err != nil {
		return Result{}, err
	}
	if last != nil && last.Info.Status == rcommon.StatusDeployed &&
		(recorded(last, ChartDigestKey) == src.Digest && recorded(last, ValuesHashKey) == hash || adoptable(last, src, hash)) {
		e.stats.unchanged.Add(1)
		return resultOf(ActionUnchanged, last, clients)
	}

	ch, archive, err := e.load(src)
	if err != nil {
		return Result{}, err
	}
	if err := checkDependencies(ch); err != nil {
		return Result{}, fmt.Errorf("chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
	}
	stamp(ch, src.Digest, hash)
	labels, err := releaseLabels(r.Labels, src.Digest, hash)
	if err != nil {
		return Result{}, err
	}
	if !r.SkipCRDs {
		if err := ensureCRDs(ctx, clients, ch); err != nil {
			return Result{}, fmt.Errorf("release %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	// Helm would discover the cluster again (after the CRDs, so their kinds are known).
	if ac.Capabilities, err = clients.capabilities(); err != nil {
		return Result{}, err
	}
	// The revision and .Release.IsUpgrade Helm's install or upgrade below gives the templates.
	opts := common.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, Revision: 1, IsInstall: true}
	if last != nil {
		opts = common.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, Revision: last.Version + 1, IsUpgrade: true}
	}
	if err := e.prerender(ctx, ch, archive, values, opts, ac.Capabilities); err != nil {
		return Result{}, fmt.Errorf("release %s/%s: %w", r.Namespace, r.Name, err)
	}

	if last == nil {
		rel, err := install(ctx, ac, r, ch, values, labels)
		if err != nil {
			clients.invalidate() // the kinds it lacked may exist by the retry
			return Result{}, fmt.Errorf("installing release %s/%s (chart %s %s): %w", r.Namespace, r.Name, ch.Name(), ch.Metadata.Version, err)
		}
		e.stats.installs.Add(1)
		return resultOf(ActionInstalled, rel, clients)
	}
	rel, err := upgrade(ctx, ac, r, ch, values, labels)
	if err != nil {
		clients.invalidate()
		return Result{}, fmt.Errorf("upgrading release %s/%s to chart %s %s: %w", r.Namespace, r.Name, ch.Name(), ch.Metadata.Version, err)
	}
	e.stats.upgrades.Add(1)
	return resultOf(ActionUpgraded, rel, clients)
}

// install runs Helm's install. The action is not cancelled with ctx (see InstallOrUpgrade).
func install(ctx context.Context, ac *action.Configuration, r Release, ch *chart.Chart, values map[string]any, labels map[string]string) (*release.Release, error) {
	in := action.NewInstall(ac)
	in.ReleaseName, in.Namespace = r.Name, r.Namespace
	in.CreateNamespace = r.CreateNamespace
	in.SkipCRDs = true // ensureCRDs did it, waiting for them
	in.Timeout = timeout(r.Timeout)
	in.WaitStrategy = waitStrategy(r.Wait)
	in.RollbackOnFailure = r.Atomic
	in.Labels = labels
	in.PostRenderer = postRenderer(r.PostRender)
	// The API server validates (see serverValidated).
	in.DisableOpenAPIValidation = true
	rel, err := in.RunWithContext(context.WithoutCancel(ctx), ch, values)
	if err != nil {
		return nil, err
	}
	return asRelease(rel)
}

// upgrade runs Helm's upgrade with the whole values of the caller. The action is not cancelled
// with ctx (see InstallOrUpgrade).
func upgrade(ctx context.Context, ac *action.Configuration, r Release, ch *chart.Chart, values map[string]any, labels map[string]string) (*release.Release, error) {
	up := action.NewUpgrade(ac)
	up.Namespace = r.Namespace
	up.SkipCRDs = true // ensureCRDs did it (Helm itself never adds CRDs on upgrade)
	up.Timeout = timeout(r.Timeout)
	up.WaitStrategy = waitStrategy(r.Wait)
	up.RollbackOnFailure = r.Atomic
	up.MaxHistory = maxHistory(r.MaxHistory)
	up.Labels = labels
	up.PostRenderer = postRenderer(r.PostRender)
	// The caller always gives the whole values: Helm must not reuse the previous ones.
	up.ResetValues = true
	up.DisableOpenAPIValidation = true // as in install
	rel, err := up.RunWithContext(context.WithoutCancel(ctx), r.Name, ch, values)
	if err != nil {
		return nil, err
	}
	return asRelease(rel)
}

func asRelease(r ri.Releaser) (*release.Release, error) {
	rel, ok := r.(*release.Release)
	if !ok || rel == nil {
		return nil, fmt.Errorf("helm returned a release of unsupported type %T", r)
	}
	return rel, nil
}

// checkDependencies refuses a chart whose Chart.yaml lists dependencies missing from its charts/
// directory (Helm would otherwise install it without them).
func checkDependencies(ch *chart.Chart) error {
	reqs := make([]ci.Dependency, 0, len(ch.Metadata.Dependencies))
	for _, d := range ch.Metadata.Dependencies {
		reqs = append(reqs, d)
	}
	return action.CheckDependencies(ch, reqs)
}

// recoverStuck repairs a release that a dead process left mid-action, and returns the release to
// continue from (nil when it was removed). The caller holds the release's lock, so no action of
// this Engine is running on it.
func (e *Engine) recoverStuck(ctx context.Context, ac *action.Configuration, last *release.Release) (*release.Release, error) {
	logger := log.FromContext(ctx)
	switch status := last.Info.Status; {
	case last.Version == 1 && (status.IsPending() || status == rcommon.StatusFailed):
		// A first install that never finished (its process died) or failed (its cluster's API
		// server went away): its record goes and the install runs again as revision 1, adopting
		// the objects it applied (they carry the release's ownership annotations). Upgrading
		// from it instead would leave a second revision of one install.
		logger.Info("Installing again a Helm release whose first install did not finish", "release", last.Namespace+"/"+last.Name, "status", status)
		if _, err := ac.Releases.Delete(last.Name, last.Version); err != nil {
			return nil, fmt.Errorf("removing the unfinished first install of release %s/%s (%s): %w", last.Namespace, last.Name, status, err)
		}
		e.stats.recoveries.Add(1)
		return nil, nil
	case status.IsPending():
		logger.Info("Recovering a Helm release left pending", "release", last.Namespace+"/"+last.Name, "revision", last.Version, "status", status)
		last.SetStatus(rcommon.StatusFailed, fmt.Sprintf("Marked failed by Flotilla: the %s did not finish", status))
		if err := ac.Releases.Update(last); err != nil {
			return nil, fmt.Errorf("marking release %s/%s revision %d (%s) failed: %w", last.Namespace, last.Name, last.Version, status, err)
		}
		e.stats.recoveries.Add(1)
		return last, nil
	case status == rcommon.StatusUninstalling || status == rcommon.StatusUninstalled:
		logger.Info("Removing a Helm release left uninstalling", "release", last.Namespace+"/"+last.Name, "status", status)
		un := action.NewUninstall(ac)
		un.IgnoreNotFound = true
		un.WaitStrategy = kube.HookOnlyStrategy
		un.Timeout = DefaultTimeout
		if _, err := un.Run(last.Name); err != nil {
			return nil, fmt.Errorf("removing release %s/%s left %s: %w", last.Namespace, last.Name, status, err)
		}
		e.stats.recoveries.Add(1)
		return nil, nil
	}
	return last, nil
}

// Uninstall removes the release and its history; nil when there is no such release.
func (e *Engine) Uninstall(ctx context.Context, cfg *rest.Config, name, namespace string) error {
	ac, unlock, err := e.lockedAction(ctx, cfg, name, namespace)
	if err != nil {
		return err
	}
	defer unlock()
	// Helm's uninstall, told to ignore a missing release, ignores every error reading it too.
	if _, err := lastRelease(ac, name); err != nil {
		return fmt.Errorf("uninstalling release %s/%s: %w", namespace, name, err)
	}
	un := action.NewUninstall(ac)
	un.IgnoreNotFound = true
	un.WaitStrategy = kube.HookOnlyStrategy
	un.Timeout = DefaultTimeout
	res, err := un.Run(name)
	if err != nil {
		return fmt.Errorf("uninstalling release %s/%s: %w", namespace, name, err)
	}
	if res != nil {
		e.stats.uninstalls.Add(1)
	}
	return nil
}

// Get returns the latest revision of the release, or ErrReleaseNotFound.
func (e *Engine) Get(ctx context.Context, cfg *rest.Config, name, namespace string) (*Installed, error) {
	if err := validateName(name, namespace); err != nil {
		return nil, err
	}
	ac, err := e.actionConfig(ctx, cfg, namespace)
	if err != nil {
		return nil, err
	}
	last, err := lastRelease(ac, name)
	if err != nil {
		return nil, fmt.Errorf("reading release %s/%s: %w", namespace, name, err)
	}
	if last == nil {
		return nil, fmt.Errorf("%w: %s/%s", ErrReleaseNotFound, namespace, name)
	}
	clients, err := e.clients.clientsFor(cfg)
	if err != nil {
		return nil, err
	}
	objects, err := manifestObjects(last.Manifest, namespace, clients.mapper)
	if err != nil {
		return nil, fmt.Errorf("reading the manifest of release %s/%s: %w", namespace, name, err)
	}
	in := &Installed{
		Name:        last.Name,
		Namespace:   last.Namespace,
		Revision:    last.Version,
		Status:      last.Info.Status.String(),
		Description: last.Info.Description,
		ChartDigest: recorded(last, ChartDigestKey),
		ValuesHash:  recorded(last, ValuesHashKey),
		Values:      last.Config,
		Labels:      last.Labels,
		Manifest:    last.Manifest,
		Objects:     objects,
	}
	if last.Chart != nil && last.Chart.Metadata != nil {
		in.ChartName, in.ChartVersion = last.Chart.Metadata.Name, last.Chart.Metadata.Version
	}
	return in, nil
}

// Rollback rolls the release back to revision (0: the previous one), keeping at most
// DefaultMaxHistory revisions.
func (e *Engine) Rollback(ctx context.Context, cfg *rest.Config, name, namespace string, revision int) error {
	ac, unlock, err := e.lockedAction(ctx, cfg, name, namespace)
	if err != nil {
		return err
	}
	defer unlock()
	last, err := lastRelease(ac, name)
	if err != nil {
		return fmt.Errorf("reading release %s/%s: %w", namespace, name, err)
	}
	if last == nil {
		return fmt.Errorf("%w: %s/%s", ErrReleaseNotFound, namespace, name)
	}
	if _, err := e.recoverStuck(ctx, ac, last); err != nil {
		return err
	}
	rb := action.NewRollback(ac)
	rb.Version = revision
	rb.MaxHistory = DefaultMaxHistory
	rb.WaitStrategy = kube.HookOnlyStrategy
	rb.Timeout = DefaultTimeout
	if err := rb.Run(name); err != nil {
		return fmt.Errorf("rolling release %s/%s back to revision %d: %w", namespace, name, revision, err)
	}
	return nil
}

// lockedAction checks a release's name and namespace, takes the release's lock, and returns the
// action configuration of its namespace; the caller calls unlock when done with the release.
func (e *Engine) lockedAction(ctx context.Context, cfg *rest.Config, name, namespace string) (_ *action.Configuration, unlock func(), _ error) {
	if err := validateName(name, namespace); err != nil {
		return nil, nil, err
	}
	unlock = e.locks.lock(releaseKey(cfg, namespace, name))
	ac, err := e.actionConfig(ctx, cfg, namespace)
	if err != nil {
		unlock()
		return nil, nil, err
	}
	return ac, unlock, nil
}

// actionConfig is a Helm action configuration for namespace of the cluster cfg, storing
// releases as Secrets in that namespace, as Helm does, and reading them with bounds.
func (e *Engine) actionConfig(ctx context.Context, cfg *rest.Config, namespace string) (*action.Configuration, error) {
	clients, err := e.clients.clientsFor(cfg)
	if err != nil {
		return nil, err
	}
	ac := action.NewConfiguration(action.ConfigurationSetLogger(logr.ToSlogHandler(log.FromContext(ctx))))
	if err := ac.Init(&restClientGetter{clients: clients, namespace: namespace}, namespace, "secret"); err != nil {
		return nil, fmt.Errorf("setting up Helm for %s: %w", clients.config.Host, err)
	}
	if kc, ok := ac.KubeClient.(*kube.Client); ok {
		kc.Namespace = namespace
		kc.Factory = serverValidated{kc.Factory}
	}
	// Helm's own driver would read records unbounded (see releasestore).
	core, err := clients.recordsClient()
	if err != nil {
		return nil, err
	}
	records := releasestore.New(core, namespace)
	records.SetLogger(ac.Logger().Handler())
	ac.Releases = storage.Init(records)
	return ac, nil
}

// lastRelease returns the release's latest revision, nil when there is none.
func lastRelease(ac *action.Configuration, name string) (*release.Release, error) {
	r, err := ac.Releases.Last(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return asRelease(r)
}

// resultOf reports action a, which left the release rel in the cluster of clients.
func resultOf(a Action, rel *release.Release, clients *clusterClients) (Result, error) {
	objects, err := manifestObjects(rel.Manifest, rel.Namespace, clients.mapper)
	if err != nil {
		return Result{}, fmt.Errorf("reading the manifest of release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	res := Result{
		Objects:     objects,
		Action:      a,
		Revision:    rel.Version,
		ChartDigest: recorded(rel, ChartDigestKey),
		ValuesHash:  recorded(rel, ValuesHashKey),
	}
	if rel.Info != nil {
		res.Status = rel.Info.Status.String()
	}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		res.ChartVersion = rel.Chart.Metadata.Version
	}
	return res, nil
}

// stamp records the chart digest and values hash in the chart's annotations, which the release
// stores with the chart.
func stamp(ch *chart.Chart, digest, hash string) {
	if ch.Metadata.Annotations == nil {
		ch.Metadata.Annotations = map[string]string{}
	}
	ch.Metadata.Annotations[ChartDigestKey] = digest
	ch.Metadata.Annotations[ValuesHashKey] = hash
}

// adoptable is true for a release another tool installed (Flotilla's stamp is missing), such as
// Cluster API Addon Provider for Helm, that runs the chart and version src resolved to with
// exactly the values whose hash is hash: it is taken as it is, without a new revision, until the
// chart or the values change. (The chart's digest cannot be compared: the other tool did not
// record it.)
func adoptable(last *release.Release, src *localChart, hash string) bool {
	if recorded(last, ChartDigestKey) != "" || last.Chart == nil || last.Chart.Metadata == nil ||
		last.Chart.Metadata.Name != src.Name || last.Chart.Metadata.Version != src.Version {
		return false
	}
	_, lastHash, err := normalizeValues(last.Config)
	return err == nil && lastHash == hash
}

// recorded reads what stamp recorded in a release.
func recorded(rel *release.Release, key string) string {
	if rel.Chart == nil || rel.Chart.Metadata == nil {
		return ""
	}
	return rel.Chart.Metadata.Annotations[key]
}

// releaseLabels are the caller's labels plus Flotilla's digest and hash labels.
func releaseLabels(caller map[string]string, digest, hash string) (map[string]string, error) {
	labels := maps.Clone(caller)
	if labels == nil {
		labels = map[string]string{}
	}
	if driver.ContainsSystemLabels(labels) {
		return nil, fmt.Errorf("release labels may not use Helm's own label names %v", driver.GetSystemLabels())
	}
	labels[ChartDigestKey] = labelValue(digest)
	labels[ValuesHashKey] = labelValue(hash)
	return labels, nil
}

// labelValue is a "sha256:<hex>" digest as a label value: the hex, cut to 63 characters.
func labelValue(digest string) string {
	v := strings.TrimPrefix(digest, "sha256:")
	if len(v) > 63 {
		v = v[:63]
	}
	return v
}

// normalizeValues returns a private copy of values in the form Helm reads values files into
// (JSON types), and their hash: SHA-256 over canonical JSON (object keys sorted).
func normalizeValues(values map[string]any) (map[string]any, string, error) {
	if values == nil {
		values = map[string]any{}
	}
	data, err := json.Marshal(values)
	if err != nil {
		return nil, "", fmt.Errorf("values are not JSON-serialisable: %w", err)
	}
	var normalized map[string]any
	if err := json.Unmarshal(data, &normalized); err != nil {
		return nil, "", fmt.Errorf("values are not JSON-serialisable: %w", err)
	}
	// Marshal again: the first encoding may differ for equal values given as different Go types.
	canonical, err := json.Marshal(normalized)
	if err != nil {
		return nil, "", err
	}
	return normalized, sha256Digest(canonical), nil
}

// ValuesHash is the hash InstallOrUpgrade records for values: SHA-256 over their canonical JSON.
func ValuesHash(values map[string]any) (string, error) {
	_, hash, err := normalizeValues(values)
	return hash, err
}

// InputsHash is the hash InstallOrUpgrade records for r (ValuesHashKey): ValuesHash of its
// values, folded with the digest of its post-render when it has one, so that a changed patch
// upgrades the release as a changed value does.
func InputsHash(r Release) (string, error) {
	hash, err := ValuesHash(r.Values)
	return foldPostRender(hash, r.PostRender), err
}

func foldPostRender(valuesHash string, post postrender.Spec) string {
	if post.Empty() {
		return valuesHash
	}
	return sha256Digest([]byte(valuesHash + "\n" + post.Digest()))
}

// postRenderer is post as Helm's post-renderer; nil when it changes nothing.
func postRenderer(post postrender.Spec) postrenderer.PostRenderer {
	if post.Empty() {
		return nil
	}
	return post
}

func waitStrategy(wait bool) kube.WaitStrategy {
	if wait {
		return kube.StatusWatcherStrategy
	}
	return kube.HookOnlyStrategy
}

func timeout(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultTimeout
	}
	return d
}

func maxHistory(n int) int {
	if n <= 0 {
		return DefaultMaxHistory
	}
	return n
}

func validateName(name, namespace string) error {
	if name == "" {
		return errors.New("release has no name")
	}
	if namespace == "" {
		return fmt.Errorf("release %s has no namespace", name)
	}
	return nil
}

func releaseKey(cfg *rest.Config, namespace, name string) string {
	host := ""
	if cfg != nil {
		host = cfg.Host
	}
	return host + "/" + namespace + "/" + name
}

// manifestObjects parses a release manifest into objects, giving namespaced objects without a
// namespace the release namespace.
func manifestObjects(manifest, namespace string, mapper meta.RESTMapper) ([]*unstructured.Unstructured, error) {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var objects []*unstructured.Unstructured
	for _, k := range keys {
		var content map[string]any
		if err := yaml.Unmarshal([]byte(docs[k]), &content); err != nil {
			return nil, err
		}
		if len(content) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: content}
		if u.GetNamespace() == "" && mapper != nil {
			gvk := u.GroupVersionKind()
			if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil && m.Scope.Name() == meta.RESTScopeNameNamespace {
				u.SetNamespace(namespace)
			}
		}
		objects = append(objects, u)
	}
	return objects, nil
}
