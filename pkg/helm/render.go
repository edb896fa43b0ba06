package helm

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"github.com/pmezard/go-difflib/difflib"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/flotilla-dev/flotilla/pkg/postrender"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// Diff returns a unified diff from the manifest the release has in the cluster (its latest
// revision; nothing when absent) to the manifest r would install, "" when they are the same.
// It renders with the cluster's version and APIs but writes nothing; template lookups are not
// run. CRDs from crds/ are not part of either manifest.
func (e *Engine) Diff(ctx context.Context, cfg *rest.Config, r Release) (string, error) {
	if err := validateName(r.Name, r.Namespace); err != nil {
		return "", err
	}
	values, _, err := normalizeValues(r.Values)
	if err != nil {
		return "", err
	}
	ac, err := e.actionConfig(ctx, cfg, r.Namespace)
	if err != nil {
		return "", err
	}
	src, err := e.resolveChart(ctx, r.Chart, r.Registry)
	if err != nil {
		return "", err
	}
	last, err := lastRelease(ac, r.Name)
	if err != nil {
		return "", fmt.Errorf("reading release %s/%s: %w", r.Namespace, r.Name, err)
	}
	ch, archive, err := e.load(src)
	if err != nil {
		return "", err
	}
	if err := checkDependencies(ch); err != nil {
		return "", fmt.Errorf("chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
	}
	clients, err := e.clients.clientsFor(cfg)
	if err != nil {
		return "", err
	}
	caps, err := clients.capabilities()
	if err != nil {
		return "", err
	}
	rendered, err := e.render(ctx, ch, archive, r.Name, r.Namespace, values, r.PostRender, caps, last != nil)
	if err != nil {
		return "", err
	}
	desired := rendered.Manifest
	installed, revision := "", 0
	if last != nil {
		installed, revision = last.Manifest, last.Version
	}
	return unifiedDiff(installed, desired,
		fmt.Sprintf("%s/%s revision %d (installed)", r.Namespace, r.Name, revision),
		fmt.Sprintf("%s/%s chart %s %s (desired)", r.Namespace, r.Name, ch.Name(), ch.Metadata.Version))
}

// Template renders r's chart with r's values, without a cluster (Helm's default capabilities),
// and describes the chart. CRDs from crds/ are not part of the manifest.
func (e *Engine) Template(ctx context.Context, r Release) (string, *ChartInfo, error) {
	rel, info, err := e.template(ctx, r, nil)
	if err != nil {
		return "", info, err
	}
	return rel.Manifest, info, nil
}

// Images renders r's chart as Template does, but for a cluster of kubeVersion (such as
// "v1.36.0"; Helm's default when empty), and returns the container images its Pods would run,
// each once, sorted: the images of every Pod template (containers, init and ephemeral
// containers) of the manifest and of the chart's hooks.
func (e *Engine) Images(ctx context.Context, r Release, kubeVersion string) ([]string, error) {
	var caps *common.Capabilities
	if kubeVersion != "" {
		kv, err := common.ParseKubeVersion(kubeVersion)
		if err != nil {
			return nil, fmt.Errorf("kubernetes version %q: %w", kubeVersion, err)
		}
		caps = &common.Capabilities{KubeVersion: *kv}
	}
	rel, _, err := e.template(ctx, r, caps)
	if err != nil {
		return nil, err
	}
	manifests := []string{rel.Manifest}
	for _, h := range rel.Hooks {
		manifests = append(manifests, h.Manifest)
	}
	images, err := podImages(manifests...)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s: %w", rel.Chart.Name(), rel.Chart.Metadata.Version, err)
	}
	return images, nil
}

// template renders r's chart without a cluster, with caps (Helm's default when nil), into a
// release that holds the manifest and the hooks.
func (e *Engine) template(ctx context.Context, r Release, caps *common.Capabilities) (*release.Release, *ChartInfo, error) {
	name, namespace := r.Name, r.Namespace
	if name == "" {
		name = "release-name"
	}
	if namespace == "" {
		namespace = "default"
	}
	values, _, err := normalizeValues(r.Values)
	if err != nil {
		return nil, nil, err
	}
	src, err := e.resolveChart(ctx, r.Chart, r.Registry)
	if err != nil {
		return nil, nil, err
	}
	ch, archive, err := e.load(src)
	if err != nil {
		return nil, nil, err
	}
	info := chartInfo(ch, src.Digest)
	if err := checkDependencies(ch); err != nil {
		return nil, info, fmt.Errorf("chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
	}
	rel, err := e.render(ctx, ch, archive, name, namespace, values, r.PostRender, caps, false)
	if err != nil {
		return nil, info, err
	}
	return rel, info, nil
}

// ChartInfo resolves ref (pulling it when it is not cached) and describes the chart, its
// values schema included.
func (e *Engine) ChartInfo(ctx context.Context, ref ChartRef, reg registryconn.Config) (*ChartInfo, error) {
	src, err := e.resolveChart(ctx, ref, reg)
	if err != nil {
		return nil, err
	}
	ch, _, err := e.load(src)
	if err != nil {
		return nil, err
	}
	return chartInfo(ch, src.Digest), nil
}

func chartInfo(ch *chart.Chart, digest string) *ChartInfo {
	info := &ChartInfo{
		Name:         ch.Name(),
		Version:      ch.Metadata.Version,
		AppVersion:   ch.Metadata.AppVersion,
		Description:  ch.Metadata.Description,
		Digest:       digest,
		ValuesSchema: ch.Schema,
		Values:       ch.Values,
	}
	for _, d := range ch.Metadata.Dependencies {
		info.Dependencies = append(info.Dependencies, Dependency{Name: d.Name, Version: d.Version, Repository: d.Repository})
	}
	return info
}

// render renders ch, loaded from archive, as Helm would install it (post is applied), without
// touching a cluster, into a release whose Manifest is what would be applied and whose Hooks
// are the hooks. With caps nil, Helm's default capabilities apply. The templates are rendered
// as InstallOrUpgrade renders them (prerender).
func (e *Engine) render(ctx context.Context, ch *chart.Chart, archive []byte, name, namespace string, values map[string]any, post postrender.Spec, caps *common.Capabilities, isUpgrade bool) (*release.Release, error) {
	// Helm renders a dry run as revision 1, an install unless isUpgrade.
	opts := common.ReleaseOptions{Name: name, Namespace: namespace, Revision: 1, IsInstall: !isUpgrade, IsUpgrade: isUpgrade}
	// The capabilities of Helm's dry run below: its defaults, with caps' version and APIs.
	effective := common.DefaultCapabilities.Copy()
	if caps != nil {
		effective.KubeVersion = caps.KubeVersion
		effective.APIVersions = append(effective.APIVersions, caps.APIVersions...)
	}
	if err := e.prerender(ctx, ch, archive, values, opts, effective); err != nil {
		return nil, err
	}
	ac := action.NewConfiguration(action.ConfigurationSetLogger(logr.ToSlogHandler(log.FromContext(ctx))))
	in := action.NewInstall(ac)
	in.DryRunStrategy = action.DryRunClient
	in.ReleaseName, in.Namespace = name, namespace
	in.Replace = true
	in.IsUpgrade = isUpgrade
	in.PostRenderer = postRenderer(post)
	if caps != nil {
		kv := caps.KubeVersion
		in.KubeVersion = &kv
		in.APIVersions = caps.APIVersions
	}
	r, err := in.RunWithContext(ctx, ch, values)
	if err != nil {
		return nil, fmt.Errorf("rendering chart %s %s: %w", ch.Name(), ch.Metadata.Version, err)
	}
	return asRelease(r)
}

func unifiedDiff(from, to, fromName, toName string) (string, error) {
	if from == to {
		return "", nil
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A:        difflib.SplitLines(from),
		B:        difflib.SplitLines(to),
		FromFile: fromName,
		ToFile:   toName,
		Context:  3,
	})
}
