package helm

import (
	"net/http"
	"os"
	"sync/atomic"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

var (
	// env is the target cluster of every test.
	env *testenv.Environment
	// cluster reaches env through a transport that counts writes.
	cluster *rest.Config
	writes  atomic.Int64
	// ociHost is the host:port of an in-process OCI registry (plain HTTP, loopback).
	ociHost string
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	var stopRegistry func()
	ociHost, stopRegistry = charttest.StartRegistry()
	code := testenv.Run(m, testenv.Options{SkipCRDs: true}, func(e *testenv.Environment) {
		env = e
		cluster = rest.CopyConfig(e.Config)
		cluster.Wrap(func(rt http.RoundTripper) http.RoundTripper { return writeCounter{rt} })
	})
	stopRegistry()
	os.Exit(code)
}

// writeCounter counts the requests that change something in the cluster.
type writeCounter struct{ next http.RoundTripper }

func (w writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		writes.Add(1)
	}
	return w.next.RoundTrip(req)
}

// testChart describes a small chart for a test: files by path relative to the chart directory.
// It is a charttest.Chart with the short names the tests of this package use.
type testChart struct {
	name, version string
	files         map[string]string
}

func (c testChart) chart() charttest.Chart {
	return charttest.Chart{Name: c.name, Version: c.version, Files: c.files}
}

// helloChart is charttest's hello chart: a ConfigMap from values and a Deployment.
func helloChart(version string) testChart {
	h := charttest.Hello(version)
	return testChart{name: h.Name, version: h.Version, files: h.Files}
}

// parentChart bundles a subchart in charts/.
func parentChart() testChart {
	return testChart{name: "parent", version: "1.0.0", files: map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: parent\nversion: 1.0.0\ndependencies:\n- name: child\n  version: 0.1.0\n",
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-parent
data:
  childGreeting: {{ .Values.child.greeting | quote }}
`,
		"values.yaml":                    "child:\n  greeting: from-parent\n",
		"charts/child/Chart.yaml":        "apiVersion: v2\nname: child\nversion: 0.1.0\n",
		"charts/child/values.yaml":       "greeting: from-child\n",
		"charts/child/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-child\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
	}}
}

// crdChart ships a CRD in crds/ and an object of it.
func crdChart() testChart {
	return testChart{name: "widgets", version: "1.0.0", files: map[string]string{
		"crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.test.flotilla.dev
spec:
  group: test.flotilla.dev
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`,
		"templates/widget.yaml": "apiVersion: test.flotilla.dev/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  size: 3\n",
	}}
}

// archive returns c as a chart archive.
func (c testChart) archive(t testing.TB) []byte {
	t.Helper()
	return charttest.Package(t, c.chart())
}

// push pushes c to the test registry as <repository>/<name>:<version> and returns the manifest
// digest.
func (c testChart) push(t testing.TB, repository string) string {
	t.Helper()
	return charttest.Push(t, ociHost+"/"+repository, c.chart())
}

// serveRepository serves a classic chart repository of charts; corrupt gives each index entry
// a wrong digest.
func serveRepository(t testing.TB, corrupt bool, charts ...testChart) string {
	t.Helper()
	return chartRepository(corrupt, charts).Serve(t)
}

// repositoryDir writes a classic chart repository of charts into a directory.
func repositoryDir(t testing.TB, corrupt bool, charts ...testChart) string {
	t.Helper()
	return chartRepository(corrupt, charts).Dir(t)
}

func chartRepository(corrupt bool, charts []testChart) charttest.Repository {
	r := charttest.Repository{WrongDigests: corrupt}
	for _, c := range charts {
		r.Charts = append(r.Charts, c.chart())
	}
	return r
}

// basicAuth answers 401 to requests without the user's credentials.
func basicAuth(user, password string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != password {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
