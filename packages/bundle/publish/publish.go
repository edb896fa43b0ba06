package publish

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"

	curated "github.com/flotilla-dev/flotilla/charts"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// DefaultKubernetesMinors are the Kubernetes minors Publish builds bundles for when
// Options.KubernetesMinors is empty.
var DefaultKubernetesMinors = []string{"1.35", "1.36"}

// Options configure Publish.
type Options struct {
	// ChartsDir holds one chart per directory (a directory without Chart.yaml is skipped).
	// Two directories may hold two versions of the same chart. Empty means Flotilla's curated
	// catalog (package charts, embedded in the binary).
	ChartsDir string
	// Registry is the registry's host[:port].
	Registry string
	// Repository is the path in the registry: charts go to <Repository>/<chart name>:<version>,
	// bundles to <Repository>:<bundle name>.
	Repository string
	// KubernetesMinors get one bundle each; DefaultKubernetesMinors when empty. A chart whose
	// Chart.yaml kubeVersion excludes a minor (<minor>.0) is left out of that minor's bundle.
	KubernetesMinors []string
	// Key signs the bundles.
	Key *ecdsa.PrivateKey
	// Connection says how to reach the registry.
	Connection registryconn.Config
	// ImageRegistry, when set, holds the images the charts and real nodes run, in the mirror
	// layout of package ociimage ("host[:port]" with an optional path prefix, reached with
	// Connection), and every bundle records them pinned by their digests there (bundle.Images),
	// signed: what `flotilla packages export` and `import` carry. Every image must be there.
	// When empty, the bundles record no images.
	ImageRegistry string
}

// Result says what Publish pushed.
type Result struct {
	Charts  []ChartResult  `json:"charts"`
	Bundles []BundleResult `json:"bundles"`
}

// ChartResult is one pushed chart.
type ChartResult struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Ref is the chart's OCI reference, oci://<registry>/<repository>/<name>:<version>.
	Ref string `json:"ref"`
	// Digest is the chart's manifest digest, which the bundle lists.
	Digest string `json:"digest"`
}

// BundleResult is one bundle.
type BundleResult struct {
	Name            string `json:"name"`
	KubernetesMinor string `json:"kubernetesMinor"`
	// Ref is <registry>/<repository>:<name>.
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
	// Unchanged is true when the newest bundle of that minor already listed the same packages:
	// nothing was pushed and Name is that bundle's.
	Unchanged bool `json:"unchanged"`
	// Packages is the number of packages the bundle lists.
	Packages int `json:"packages"`
}

// Publish packages every chart in opts.ChartsDir, pushes them as OCI Helm charts, and pushes a
// signed bundle listing them for each Kubernetes minor: build n+1 after the newest build n found
// in the registry, or nothing when that one already lists the same packages and verifies with
// opts.Key (a new key makes a new build, signed with it). Charts are packaged
// reproducibly, so running Publish again on the same charts pushes identical charts (same
// digests) and no new bundle.
func Publish(ctx context.Context, opts Options) (Result, error) {
	if err := opts.validate(); err != nil {
		return Result{}, err
	}
	if opts.ChartsDir == "" {
		tmp, err := os.MkdirTemp("", "flotilla-charts-")
		if err != nil {
			return Result{}, err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		if err := curated.WriteTo(tmp); err != nil {
			return Result{}, err
		}
		opts.ChartsDir = tmp
	}
	charts, err := packageAll(opts.ChartsDir)
	if err != nil {
		return Result{}, err
	}
	helmClient, err := helmRegistryClient(opts.Connection)
	if err != nil {
		return Result{}, err
	}
	var res Result
	pkgs := map[string]*bundle.Package{}
	kubeVersions := map[string]string{} // <package>@<version> -> Chart.yaml kubeVersion
	for _, c := range charts {
		meta := c.Chart.Metadata
		repo := strings.Trim(opts.Repository+"/"+meta.Name, "/")
		ref := opts.Registry + "/" + repo + ":" + strings.ReplaceAll(meta.Version, "+", "_")
		pushed, err := helmClient.Push(c.Archive, ref, registry.PushOptCreationTime(Created))
		if err != nil {
			return res, fmt.Errorf("pushing chart %s %s to %s: %w", meta.Name, meta.Version, ref, err)
		}
		res.Charts = append(res.Charts, ChartResult{Name: meta.Name, Version: meta.Version, Ref: "oci://" + ref, Digest: pushed.Manifest.Digest})
		p := pkgs[meta.Name]
		if p == nil {
			p = &bundle.Package{Name: meta.Name, Description: meta.Description, Source: bundle.Source{Registry: opts.Registry, Repository: repo}}
			pkgs[meta.Name] = p
		}
		p.Versions = append(p.Versions, bundle.Version{
			Version:      meta.Version,
			Digest:       pushed.Manifest.Digest,
			Schema:       string(c.Chart.Schema),
			Dependencies: packageDependencies(c.Chart),
		})
		kubeVersions[meta.Name+"@"+meta.Version] = meta.KubeVersion
	}

	remoteOpts, err := bundle.RemoteOptions(opts.Connection)
	if err != nil {
		return res, err
	}
	minors := opts.KubernetesMinors
	if len(minors) == 0 {
		minors = DefaultKubernetesMinors
	}
	for _, m := range minors {
		minor, err := kubeversion.Minor(m)
		if err != nil {
			return res, err
		}
		b := bundle.Bundle{KubernetesMinor: minor, Packages: packagesFor(pkgs, kubeVersions, minor)}
		if opts.ImageRegistry != "" {
			if b.Images, err = bundleImages(ctx, b, opts.ImageRegistry, opts.Connection, remoteOpts); err != nil {
				return res, err
			}
		}
		br, err := publishBundle(ctx, opts, b, remoteOpts)
		if err != nil {
			return res, err
		}
		res.Bundles = append(res.Bundles, br)
	}
	return res, nil
}

func (o Options) validate() error {
	var errs []error
	if o.Registry == "" || strings.Contains(o.Registry, "://") || strings.Contains(o.Registry, "/") {
		errs = append(errs, fmt.Errorf("registry %q: give the registry's host[:port] only, such as 127.0.0.1:5001", o.Registry))
	}
	if o.Repository == "" {
		errs = append(errs, errors.New("a repository is required, such as flotilla"))
	}
	if o.Key == nil {
		errs = append(errs, errors.New("a signing key is required"))
	}
	if o.ImageRegistry != "" {
		if _, _, err := registryconn.SplitRegistry(o.ImageRegistry); err != nil {
			errs = append(errs, fmt.Errorf("image registry: %w", err))
		}
	}
	return errors.Join(errs...)
}

// packageAll packages every chart directory of dir, sorted by name then version.
func packageAll(dir string) ([]Chart, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the charts directory: %w", err)
	}
	var charts []Chart
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, e.Name(), chartutil.ChartfileName)); err != nil {
			continue
		}
		c, err := PackageChart(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		charts = append(charts, c)
	}
	if len(charts) == 0 {
		return nil, fmt.Errorf("no charts in %s: it should hold one directory with a Chart.yaml per chart", dir)
	}
	seen := map[string]bool{}
	for _, c := range charts {
		key := c.Chart.Name() + "@" + c.Chart.Metadata.Version
		if seen[key] {
			return nil, fmt.Errorf("chart %s version %s is in %s twice", c.Chart.Name(), c.Chart.Metadata.Version, dir)
		}
		seen[key] = true
	}
	sort.SliceStable(charts, func(i, j int) bool { return charts[i].Chart.Name() < charts[j].Chart.Name() })
	return charts, nil
}

// packagesFor returns the packages and versions compatible with minor, sorted by name, versions
// newest first.
func packagesFor(pkgs map[string]*bundle.Package, kubeVersions map[string]string, minor string) []bundle.Package {
	var out []bundle.Package
	for _, p := range pkgs {
		q := *p
		q.Versions = nil
		for _, v := range p.Versions {
			if kv := kubeVersions[p.Name+"@"+v.Version]; kv != "" && !chartutil.IsCompatibleRange(kv, minor+".0") {
				continue
			}
			q.Versions = append(q.Versions, v)
		}
		if len(q.Versions) == 0 {
			continue
		}
		sort.SliceStable(q.Versions, func(i, j int) bool { return newer(q.Versions[i].Version, q.Versions[j].Version) })
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func newer(a, b string) bool {
	va, errA := semver.NewVersion(a)
	vb, errB := semver.NewVersion(b)
	if errA != nil || errB != nil {
		return a > b
	}
	return va.GreaterThan(vb)
}

// publishBundle signs and pushes b as the next build of its minor, unless the newest build
// already lists the same packages under a signature of this key.
func publishBundle(ctx context.Context, opts Options, b bundle.Bundle, remoteOpts []remote.Option) (BundleResult, error) {
	repoRef := opts.Registry + "/" + opts.Repository
	names, err := bundle.List(ctx, opts.Registry, opts.Repository, b.KubernetesMinor, remoteOpts...)
	if err != nil {
		return BundleResult{}, err
	}
	b.Build = 1
	if len(names) > 0 {
		newest := names[len(names)-1]
		_, build, _ := bundle.ParseName(newest)
		b.Build = build + 1
		// The newest bundle is kept when it lists the same packages and verifies with this key;
		// one that does not pull or verify (another key signed it) is replaced by a new build.
		if prev, err := bundle.Pull(ctx, repoRef+":"+newest, remoteOpts...); err == nil && bundle.SameContent(prev.Bundle, b) &&
			bundle.Verify(prev, &opts.Key.PublicKey) == nil {
			return BundleResult{Name: newest, KubernetesMinor: b.KubernetesMinor, Ref: repoRef + ":" + newest,
				Digest: prev.Digest, Unchanged: true, Packages: len(prev.Bundle.Packages)}, nil
		}
	}
	if b.Name, err = bundle.Name(b.KubernetesMinor, b.Build); err != nil {
		return BundleResult{}, err
	}
	if err := b.Validate(); err != nil {
		return BundleResult{}, err
	}
	s, err := bundle.Sign(b, opts.Key)
	if err != nil {
		return BundleResult{}, err
	}
	ref := repoRef + ":" + b.Name
	if err := bundle.Push(ctx, ref, s, remoteOpts...); err != nil {
		return BundleResult{}, err
	}
	digest, err := bundle.ManifestDigest(s)
	if err != nil {
		return BundleResult{}, err
	}
	return BundleResult{Name: b.Name, KubernetesMinor: b.KubernetesMinor, Ref: ref, Digest: digest, Packages: len(b.Packages)}, nil
}

// helmRegistryClient is Helm's OCI client for conn: what `helm push` uses, so pushed charts are
// Helm charts by construction. Without a username, Helm's and then Docker's credential stores
// are used.
func helmRegistryClient(conn registryconn.Config) (*registry.Client, error) {
	t, err := conn.Transport()
	if err != nil {
		return nil, err
	}
	opts := []registry.ClientOption{
		registry.ClientOptHTTPClient(&http.Client{Transport: t}),
		registry.ClientOptWriter(io.Discard),
	}
	if conn.Username != "" {
		opts = append(opts, registry.ClientOptBasicAuth(conn.Username, conn.Password))
	}
	if conn.PlainHTTP {
		opts = append(opts, registry.ClientOptPlainHTTP())
	}
	c, err := registry.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating Helm's registry client: %w", err)
	}
	return c, nil
}
