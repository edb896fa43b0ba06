package publish

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// DependenciesAnnotation is the Chart.yaml annotation that names, comma separated, the packages
// of the same bundle that must be installed before this chart's package.
const DependenciesAnnotation = "packages.flotilla.dev/dependencies"

// epoch is the time stamped on every file of a packaged chart, so that the same chart source
// always packages to the same bytes (and so the same digest), whatever its files' mtimes.
var epoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// Created is the creation time Publish gives pushed charts (the OCI "created" annotation), fixed
// for the same reason as the file times.
const Created = "2000-01-01T00:00:00Z"

// Chart is a packaged chart.
type Chart struct {
	// Chart is the loaded chart, dependencies included.
	Chart *chart.Chart
	// Archive is the .tgz, as `helm package` would write it.
	Archive []byte
}

// PackageChart loads the chart in dir, vendors its file:// dependencies (packaging them from
// their directories, recursively) unless charts/ already holds them, checks that the default
// values satisfy values.schema.json, and returns the .tgz. File times are fixed, so the archive
// of the same source is always byte-identical.
func PackageChart(dir string) (Chart, error) {
	c, err := loadWithDependencies(dir, map[string]bool{})
	if err != nil {
		return Chart{}, err
	}
	if err := commonutil.ValidateAgainstSchema(c, defaultValues(c)); err != nil {
		return Chart{}, fmt.Errorf("chart %s: its default values break its values.schema.json: %w", dir, err)
	}
	fixTimes(c)
	tmp, err := os.MkdirTemp("", "flotilla-chart-")
	if err != nil {
		return Chart{}, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	path, err := chartutil.Save(c, tmp)
	if err != nil {
		return Chart{}, fmt.Errorf("packaging chart %s: %w", dir, err)
	}
	data, err := os.ReadFile(path) //nolint:gosec // our own temporary file
	if err != nil {
		return Chart{}, err
	}
	return Chart{Chart: c, Archive: data}, nil
}

// loadWithDependencies loads the chart in dir and adds the dependencies its Chart.yaml lists
// with a file:// repository that charts/ does not hold yet. seen stops dependency cycles.
func loadWithDependencies(dir string, seen map[string]bool) (*chart.Chart, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if seen[abs] {
		return nil, fmt.Errorf("chart %s depends on itself through its file:// dependencies", abs)
	}
	seen[abs] = true
	defer delete(seen, abs)

	c, err := loader.LoadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", dir, err)
	}
	vendored := map[string]*chart.Chart{}
	for _, d := range c.Dependencies() {
		vendored[d.Name()] = d
	}
	for _, dep := range c.Metadata.Dependencies {
		if have, ok := vendored[dep.Name]; ok {
			if err := checkVersion(c.Name(), dep, have); err != nil {
				return nil, err
			}
			continue
		}
		if !strings.HasPrefix(dep.Repository, "file://") {
			return nil, fmt.Errorf("chart %s: dependency %s (%s) is not in charts/; run `helm dependency update %s` first, or use a file:// repository",
				c.Name(), dep.Name, dep.Repository, dir)
		}
		depDir := filepath.Join(abs, strings.TrimPrefix(dep.Repository, "file://"))
		sub, err := loadWithDependencies(depDir, seen)
		if err != nil {
			return nil, fmt.Errorf("chart %s: dependency %s: %w", c.Name(), dep.Name, err)
		}
		if sub.Name() != dep.Name {
			return nil, fmt.Errorf("chart %s: dependency %s: %s holds chart %s", c.Name(), dep.Name, depDir, sub.Name())
		}
		if err := checkVersion(c.Name(), dep, sub); err != nil {
			return nil, err
		}
		c.AddDependency(sub)
	}
	return c, nil
}

func checkVersion(parent string, dep *chart.Dependency, have *chart.Chart) error {
	if dep.Version == "" {
		return nil
	}
	constraint, err := semver.NewConstraint(dep.Version)
	if err != nil {
		return fmt.Errorf("chart %s: dependency %s: version %q: %w", parent, dep.Name, dep.Version, err)
	}
	v, err := semver.NewVersion(have.Metadata.Version)
	if err != nil || !constraint.Check(v) {
		return fmt.Errorf("chart %s: dependency %s wants version %s, found %s", parent, dep.Name, dep.Version, have.Metadata.Version)
	}
	return nil
}

// defaultValues are the chart's values.yaml with its subcharts' defaults merged in, as Helm
// computes them before rendering.
func defaultValues(c *chart.Chart) map[string]any {
	vals, err := commonutil.CoalesceValues(c, map[string]any{})
	if err != nil {
		return c.Values
	}
	return vals
}

// fixTimes sets every time a packaged chart records to epoch.
func fixTimes(c *chart.Chart) {
	c.ModTime, c.SchemaModTime = epoch, epoch
	for _, files := range [][]*common.File{c.Raw, c.Templates, c.Files} {
		for _, f := range files {
			f.ModTime = epoch
		}
	}
	if c.Lock != nil {
		c.Lock.Generated = epoch
	}
	for _, d := range c.Dependencies() {
		fixTimes(d)
	}
}

// packageDependencies reads DependenciesAnnotation.
func packageDependencies(c *chart.Chart) []string {
	var deps []string
	for _, d := range strings.Split(c.Metadata.Annotations[DependenciesAnnotation], ",") {
		if d = strings.TrimSpace(d); d != "" {
			deps = append(deps, d)
		}
	}
	return deps
}
