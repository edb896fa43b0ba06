package charttest

import (
	"os"
	"path/filepath"
	"testing"

	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// Chart is a small chart: its name, its version and its files by path relative to the chart
// directory. Chart.yaml is written from Name and Version unless Files holds one (a chart with
// dependencies, say), which must then name the same chart and version.
type Chart struct {
	Name, Version string
	Files         map[string]string
}

// WriteDir writes c into dir/<name> and returns that directory.
func WriteDir(t testing.TB, dir string, c Chart) string {
	t.Helper()
	root := filepath.Join(dir, c.Name)
	files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: " + c.Name + "\nversion: " + c.Version + "\n"}
	for p, content := range c.Files {
		files[p] = content
	}
	for p, content := range files {
		path := filepath.Join(root, p)
		must(t, os.MkdirAll(filepath.Dir(path), 0o750))
		must(t, os.WriteFile(path, []byte(content), 0o600))
	}
	return root
}

// Package returns c as a chart archive (.tgz), as `helm package` makes it.
func Package(t testing.TB, c Chart) []byte {
	t.Helper()
	_, data := load(t, c)
	return data
}

// load writes c, loads it as Helm does and packages it.
func load(t testing.TB, c Chart) (*chart.Chart, []byte) {
	t.Helper()
	ch, err := loader.LoadDir(WriteDir(t, t.TempDir(), c))
	must(t, err)
	out, err := chartutil.Save(ch, t.TempDir())
	must(t, err)
	data, err := os.ReadFile(out) // #nosec G304 -- a file chartutil.Save just wrote into a temporary directory
	must(t, err)
	return ch, data
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
