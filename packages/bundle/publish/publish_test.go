package publish_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/registry"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/packages/bundle/publish"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// chartsDir is the repository's curated catalog.
const chartsDir = "../../../charts"

// render renders c as `helm template` does: values coalesced with the chart's defaults and
// validated against its schema, then Helm's engine.
func render(c *chart.Chart, release string, vals map[string]any) (map[string]*unstructured.Unstructured, error) {
	opts := common.ReleaseOptions{Name: release, Namespace: "demo", Revision: 1, IsInstall: true}
	values, err := commonutil.ToRenderValuesWithSchemaValidation(c, vals, opts, common.DefaultCapabilities, false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(c, values)
	if err != nil {
		return nil, err
	}
	objs := map[string]*unstructured.Unstructured{}
	for name, content := range files {
		if !strings.HasSuffix(name, ".yaml") {
			continue
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(content), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, err
			}
			if len(u.Object) == 0 {
				continue
			}
			objs[u.GetKind()+"/"+u.GetName()] = u
		}
	}
	return objs, nil
}

func packageChart(t *testing.T, name string) *chart.Chart {
	t.Helper()
	c, err := publish.PackageChart(filepath.Join(chartsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := loader.LoadArchive(bytes.NewReader(c.Archive))
	if err != nil {
		t.Fatalf("the packaged chart does not load: %v", err)
	}
	return loaded
}

func TestHelloFlotillaRendersItsConfig(t *testing.T) {
	c := packageChart(t, "hello-flotilla")
	tests := []struct {
		name         string
		values       map[string]any
		wantReplicas int64
		wantMessage  string
		wantErr      string
	}{
		{name: "the defaults make one replica with the default message", values: nil, wantReplicas: 1, wantMessage: "Hello from Flotilla!"},
		{name: "the message and replicas come from the config", values: map[string]any{"message": "Hi <there>", "replicas": 3},
			wantReplicas: 3, wantMessage: "Hi <there>"},
		{name: "replicas that are not a number break the schema", values: map[string]any{"replicas": "two"}, wantErr: "replicas"},
		{name: "an unknown key breaks the schema", values: map[string]any{"mesage": "typo"}, wantErr: "mesage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := render(c, "hello-flotilla", tt.values)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objs).To(HaveKey("Deployment/hello-flotilla"))
			g.Expect(objs).To(HaveKey("Service/hello-flotilla"))
			g.Expect(objs).To(HaveKey("ConfigMap/hello-flotilla"))
			replicas := replicasOf(objs["Deployment/hello-flotilla"])
			g.Expect(replicas).To(Equal(tt.wantReplicas))
			msg, _, _ := unstructured.NestedString(objs["ConfigMap/hello-flotilla"].Object, "data", "message")
			g.Expect(msg).To(Equal(tt.wantMessage))
			page, _, _ := unstructured.NestedString(objs["ConfigMap/hello-flotilla"].Object, "data", "index.html")
			g.Expect(page).To(ContainSubstring(strings.NewReplacer("<", "&lt;", ">", "&gt;").Replace(tt.wantMessage)))
		})
	}
}

func TestFlotillaGreeterShipsItsCRD(t *testing.T) {
	g := NewWithT(t)
	c := packageChart(t, "flotilla-greeter")
	crds := c.CRDObjects()
	g.Expect(crds).To(HaveLen(1))
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(yaml.UnmarshalStrict(crds[0].File.Data, &crd)).To(Succeed())
	g.Expect(crd.Name).To(Equal("greetings.greeter.flotilla.dev"))
	g.Expect(crd.Spec.Versions).To(HaveLen(1))
	g.Expect(crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Required).To(ConsistOf("message"))
	objs, err := render(c, "greeter", map[string]any{"example": map[string]any{"message": "Ahoy"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveKey("Greeting/greeter-example"))
	msg, _, _ := unstructured.NestedString(objs["Greeting/greeter-example"].Object, "spec", "message")
	g.Expect(msg).To(Equal("Ahoy"))
}

func TestHelloStackIsSelfContained(t *testing.T) {
	g := NewWithT(t)
	c := packageChart(t, "hello-stack")
	g.Expect(c.Dependencies()).To(HaveLen(1), "hello-flotilla is vendored into the package")
	g.Expect(c.Dependencies()[0].Name()).To(Equal("hello-flotilla"))
	objs, err := render(c, "stack", map[string]any{"hello-flotilla": map[string]any{"replicas": 4}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveKey("Greeting/stack"))
	g.Expect(objs).To(HaveKey("Deployment/stack-hello-flotilla"))
	replicas := replicasOf(objs["Deployment/stack-hello-flotilla"])
	g.Expect(replicas).To(Equal(int64(4)))

	_, err = render(c, "stack", map[string]any{"hello-flotilla": map[string]any{"replicas": "four"}})
	g.Expect(err).To(MatchError(ContainSubstring("replicas")), "the subchart's schema applies to its values")
}

func TestPackagingIsReproducible(t *testing.T) {
	g := NewWithT(t)
	dir := copyCharts(t)
	first, err := publish.PackageChart(filepath.Join(dir, "hello-stack"))
	g.Expect(err).NotTo(HaveOccurred())
	later := time.Now().Add(time.Hour)
	g.Expect(os.Chtimes(filepath.Join(dir, "hello-flotilla", "values.yaml"), later, later)).To(Succeed())
	second, err := publish.PackageChart(filepath.Join(dir, "hello-stack"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Archive).To(Equal(first.Archive), "file times do not change the archive")
}

func TestPublishThenHelmPullsTheChartTheBundleLists(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	h, err := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	srv := httptest.NewServer(h)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	dir := copyCharts(t)
	opts := publish.Options{ChartsDir: dir, Registry: host, Repository: "flotilla", Key: key,
		Connection: registryconn.Config{PlainHTTP: true}}

	res, err := publish.Publish(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Charts).To(HaveLen(3))
	g.Expect(res.Bundles).To(HaveLen(2))
	g.Expect(res.Bundles[0].Name).To(Equal("v1-35-1"))
	g.Expect(res.Bundles[1].Name).To(Equal("v1-36-1"))

	s, err := bundle.Pull(ctx, host+"/flotilla:v1-36-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Verify(s, &key.PublicKey)).To(Succeed())
	g.Expect(s.Digest).To(Equal(res.Bundles[1].Digest))
	hello, ok := s.Bundle.Package("hello-flotilla")
	g.Expect(ok).To(BeTrue())
	g.Expect(hello.Source).To(Equal(bundle.Source{Registry: host, Repository: "flotilla/hello-flotilla"}))
	g.Expect(hello.Versions).To(HaveLen(1))
	g.Expect(hello.Versions[0].Schema).To(ContainSubstring(`"replicas"`))
	stack, _ := s.Bundle.Package("hello-stack")
	g.Expect(stack.Versions[0].Dependencies).To(Equal([]string{"flotilla-greeter"}))

	// Helm's own OCI client pulls the chart by the digest the bundle lists, and it loads.
	helmClient, err := registry.NewClient(registry.ClientOptPlainHTTP(), registry.ClientOptWriter(io.Discard))
	g.Expect(err).NotTo(HaveOccurred())
	pulled, err := helmClient.Pull(hello.Source.Registry + "/" + hello.Source.Repository + "@" + hello.Versions[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Manifest.Digest).To(Equal(hello.Versions[0].Digest))
	c, err := loader.LoadArchive(bytes.NewReader(pulled.Chart.Data))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Metadata.Name).To(Equal("hello-flotilla"))
	objs, err := render(c, "hello-flotilla", map[string]any{"message": "pulled"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveKey("Deployment/hello-flotilla"))

	// The same charts again: same digests, no new bundle.
	again, err := publish.Publish(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Charts).To(Equal(res.Charts))
	for i, b := range again.Bundles {
		g.Expect(b.Unchanged).To(BeTrue())
		g.Expect(b.Name).To(Equal(res.Bundles[i].Name))
		g.Expect(b.Digest).To(Equal(res.Bundles[i].Digest))
	}

	// Another signing key makes the next build, signed with it, though the charts are the same.
	newKey, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	rekeyed := opts
	rekeyed.Key, rekeyed.KubernetesMinors = newKey, []string{"1.35"}
	res2, err := publish.Publish(ctx, rekeyed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res2.Bundles[0].Name).To(Equal("v1-35-2"))
	s2, err := bundle.Pull(ctx, host+"/flotilla:v1-35-2")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Verify(s2, &newKey.PublicKey)).To(Succeed())

	// A changed chart makes the next build.
	values := filepath.Join(dir, "hello-flotilla", "values.yaml")
	data, err := os.ReadFile(values)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(values, bytes.Replace(data, []byte("Hello from Flotilla!"), []byte("Hello again!"), 1), 0o600)).To(Succeed())
	opts.KubernetesMinors = []string{"1.36"}
	changed, err := publish.Publish(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed.Bundles).To(HaveLen(1))
	g.Expect(changed.Bundles[0].Name).To(Equal("v1-36-2"))
	g.Expect(changed.Bundles[0].Unchanged).To(BeFalse())
	names, err := bundle.List(ctx, host, "flotilla", "1.36")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(Equal([]string{"v1-36-1", "v1-36-2"}))
}

// copyCharts copies the curated charts into a temporary directory the test may change.
func copyCharts(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(chartsDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(chartsDir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		data, err := os.ReadFile(path) //nolint:gosec // test data
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// replicasOf reads spec.replicas, which the YAML decoder may give as an int64 or a float64.
func replicasOf(u *unstructured.Unstructured) int64 {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "replicas")
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return -1
}
