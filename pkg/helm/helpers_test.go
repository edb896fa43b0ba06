package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/registry"
	repo "helm.sh/helm/v4/pkg/repo/v1"
	"k8s.io/client-go/rest"

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
	reg := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	ociHost = strings.TrimPrefix(reg.URL, "http://")
	code := testenv.Run(m, testenv.Options{SkipCRDs: true}, func(e *testenv.Environment) {
		env = e
		cluster = rest.CopyConfig(e.Config)
		cluster.Wrap(func(rt http.RoundTripper) http.RoundTripper { return writeCounter{rt} })
	})
	reg.Close()
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
type testChart struct {
	name, version string
	files         map[string]string
}

// helloChart is a web app: a ConfigMap from values and a Deployment.
func helloChart(version string) testChart {
	return testChart{name: "hello", version: version, files: map[string]string{
		"values.yaml": "greeting: hello\nreplicas: 1\n",
		"values.schema.json": `{"$schema": "https://json-schema.org/draft-07/schema#", "type": "object",
  "properties": {"greeting": {"type": "string"}, "replicas": {"type": "integer"}}}`,
		"templates/configmap.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  greeting: {{ .Values.greeting | quote }}
  version: {{ .Chart.Version | quote }}
`,
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
      - name: web
        image: registry.example/hello:1
`,
	}}
}

// parentChart bundles a subchart in charts/.
func parentChart() testChart {
	return testChart{name: "parent", version: "1.0.0", files: map[string]string{
		"Chart.yaml.deps": "dependencies:\n- name: child\n  version: 0.1.0\n",
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

// archive writes c as a chart archive and returns its bytes.
func (c testChart) archive(t testing.TB) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), c.name)
	chartYAML := "apiVersion: v2\nname: " + c.name + "\nversion: " + c.version + "\n" + c.files["Chart.yaml.deps"]
	files := map[string]string{"Chart.yaml": chartYAML}
	for p, content := range c.files {
		if p != "Chart.yaml.deps" {
			files[p] = content
		}
	}
	for p, content := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, p), []byte(content), 0o644))
	}
	ch, err := loader.LoadDir(dir)
	must(t, err)
	out, err := chartutil.Save(ch, t.TempDir())
	must(t, err)
	data, err := os.ReadFile(out)
	must(t, err)
	return data
}

// push pushes c to the test registry under repository charts/<name>:<version> and returns the
// manifest digest.
func (c testChart) push(t testing.TB, repository string) string {
	t.Helper()
	client, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptWriter(io.Discard),
		registry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "creds.json")))
	must(t, err)
	res, err := client.Push(c.archive(t), ociHost+"/"+repository+"/"+c.name+":"+c.version)
	must(t, err)
	return res.Manifest.Digest
}

// serveRepository serves a classic chart repository of charts; corrupt gives each index entry
// a wrong digest.
func serveRepository(t testing.TB, corrupt bool, charts ...testChart) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(repositoryDir(t, corrupt, charts...))))
	t.Cleanup(srv.Close)
	return srv.URL
}

// repositoryDir writes a classic chart repository of charts into a directory.
func repositoryDir(t testing.TB, corrupt bool, charts ...testChart) string {
	t.Helper()
	dir := t.TempDir()
	index := repo.NewIndexFile()
	for _, c := range charts {
		data := c.archive(t)
		name := c.name + "-" + c.version + ".tgz"
		must(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
		sum := sha256.Sum256(data)
		digest := hex.EncodeToString(sum[:])
		if corrupt {
			digest = strings.Repeat("0", 64)
		}
		must(t, index.MustAdd(&chart.Metadata{APIVersion: "v2", Name: c.name, Version: c.version}, name, "", digest))
	}
	must(t, index.WriteFile(filepath.Join(dir, "index.yaml"), 0o644))
	return dir
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
