package helm

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// newEngine returns an Engine whose chart cache directory does not exist yet.
func newEngine(t *testing.T) *Engine {
	return &Engine{ChartCache: filepath.Join(t.TempDir(), "cache", "charts")}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// releaseSecrets lists Helm's release Secrets of a release.
func releaseSecrets(g Gomega, ctx context.Context, namespace, name string) []corev1.Secret {
	list := &corev1.SecretList{}
	g.Expect(env.Client.List(ctx, list, ctrlclient.InNamespace(namespace), ctrlclient.MatchingLabels{"owner": "helm", "name": name})).To(Succeed())
	return list.Items
}

func configMapData(g Gomega, ctx context.Context, namespace, name string) map[string]string {
	cm := &corev1.ConfigMap{}
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, cm)).To(Succeed())
	return cm.Data
}

// TestAReleaseGoesThroughItsWholeLife installs, resyncs, upgrades, diffs, bounds the history,
// rolls back and uninstalls one release from an OCI registry, checking the cluster at each step.
func TestAReleaseGoesThroughItsWholeLife(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	digest := helloChart("0.1.0").push(t, "life")
	e := newEngine(t)
	rel := Release{
		Name: "web", Namespace: ns,
		Chart:      ChartRef{RepoURL: "oci://" + ociHost + "/life", Name: "hello", Version: "0.1.0"},
		Registry:   registryconn.Config{PlainHTTP: true},
		Values:     map[string]any{"greeting": "ahoy"},
		MaxHistory: 3,
		Labels:     map[string]string{"owner.flotilla.dev/name": "p1"},
	}

	// Install.
	res, err := e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(MatchFields(IgnoreExtras, Fields{"Action": Equal(ActionInstalled), "Revision": Equal(1), "Status": Equal("deployed"),
		"ChartVersion": Equal("0.1.0"), "ChartDigest": Equal(digest), "ValuesHash": Equal(mustHash(g, rel.Values))}))
	g.Expect(objectNames(res.Objects)).To(Equal([]string{"ConfigMap " + ns + "/web-config", "Deployment " + ns + "/web"}),
		"the manifest's objects, namespaced")
	g.Expect(configMapData(g, ctx, ns, "web-config")).To(HaveKeyWithValue("greeting", "ahoy"))
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "web"}, &appsv1.Deployment{})).To(Succeed())
	secrets := releaseSecrets(g, ctx, ns, "web")
	g.Expect(secrets).To(HaveLen(1))
	g.Expect(secrets[0].Labels).To(HaveKeyWithValue(ChartDigestKey, labelValue(digest)))
	g.Expect(secrets[0].Labels).To(HaveKeyWithValue("owner.flotilla.dev/name", "p1"))
	g.Expect(e.Stats().ChartPulls).To(Equal(int64(1)))

	// The same inputs again: nothing written, nothing pulled, no new revision.
	before := writes.Load()
	res, err = e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUnchanged))
	g.Expect(res.Revision).To(Equal(1))
	g.Expect(writes.Load()).To(Equal(before), "an unchanged release writes nothing to the cluster")
	g.Expect(e.Stats().ChartPulls).To(Equal(int64(1)), "a cached chart is not pulled again")
	g.Expect(e.Stats().SourceLookups).To(Equal(int64(2)), "resolving the tag is one HEAD per call")
	g.Expect(releaseSecrets(g, ctx, ns, "web")).To(HaveLen(1))

	// Diff of changed values shows the changed line, and nothing for the installed values.
	same, err := e.Diff(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(same).To(BeEmpty())
	changed := rel
	changed.Values = map[string]any{"greeting": "hej"}
	diff, err := e.Diff(ctx, cluster, changed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(diff).To(ContainSubstring("\n-  greeting: \"ahoy\"\n"))
	g.Expect(diff).To(ContainSubstring("\n+  greeting: \"hej\"\n"))
	g.Expect(diff).NotTo(ContainSubstring("replicas"), "unchanged lines far from the change are not in the diff")

	// Changed values upgrade.
	res, err = e.InstallOrUpgrade(ctx, cluster, changed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUpgraded))
	g.Expect(res.Revision).To(Equal(2))
	g.Expect(configMapData(g, ctx, ns, "web-config")).To(HaveKeyWithValue("greeting", "hej"))

	// A new chart version upgrades too.
	digest2 := helloChart("0.2.0").push(t, "life")
	newer := changed
	newer.Chart.Version = ""
	res, err = e.InstallOrUpgrade(ctx, cluster, newer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUpgraded))
	g.Expect(res.Revision).To(Equal(3))
	g.Expect(res.ChartVersion).To(Equal("0.2.0"))
	g.Expect(res.ChartDigest).To(Equal(digest2))
	g.Expect(configMapData(g, ctx, ns, "web-config")).To(HaveKeyWithValue("version", "0.2.0"))

	// History stays bounded.
	for i := range 3 {
		newer.Values = map[string]any{"greeting": fmt.Sprintf("hello %d", i)}
		_, err = e.InstallOrUpgrade(ctx, cluster, newer)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(releaseSecrets(g, ctx, ns, "web")).To(HaveLen(3))

	// Get reports the release and its objects.
	got, err := e.Get(ctx, cluster, "web", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Revision).To(Equal(6))
	g.Expect(got.Status).To(Equal("deployed"))
	g.Expect(got.ChartVersion).To(Equal("0.2.0"))
	g.Expect(got.ChartDigest).To(Equal(digest2))
	g.Expect(got.ValuesHash).To(Equal(mustHash(g, newer.Values)))
	g.Expect(objectNames(got.Objects)).To(Equal([]string{"ConfigMap " + ns + "/web-config", "Deployment " + ns + "/web"}))

	// Rollback goes back to the previous revision's values.
	g.Expect(e.Rollback(ctx, cluster, "web", ns, 0)).To(Succeed())
	g.Expect(configMapData(g, ctx, ns, "web-config")).To(HaveKeyWithValue("greeting", "hello 1"))
	got, err = e.Get(ctx, cluster, "web", ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Revision).To(Equal(7))
	g.Expect(len(releaseSecrets(g, ctx, ns, "web"))).To(BeNumerically("<=", DefaultMaxHistory))

	// Uninstall removes the objects and the release; a second uninstall is a no-op.
	g.Expect(e.Uninstall(ctx, cluster, "web", ns)).To(Succeed())
	err = env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "web-config"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the ConfigMap is gone: %v", err)
	g.Expect(releaseSecrets(g, ctx, ns, "web")).To(BeEmpty())
	_, err = e.Get(ctx, cluster, "web", ns)
	g.Expect(err).To(MatchError(ErrReleaseNotFound))
	g.Expect(e.Uninstall(ctx, cluster, "web", ns)).To(Succeed())
}

func mustHash(g Gomega, values map[string]any) string {
	h, err := ValuesHash(values)
	g.Expect(err).NotTo(HaveOccurred())
	return h
}

// TestChartsWithDependenciesAndCRDsInstall installs a chart bundling a subchart and one shipping
// a CRD with an object of it, into a namespace the engine creates.
func TestChartsWithDependenciesAndCRDsInstall(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := "created-by-helm"
	parentChart().push(t, "deps")
	crdChart().push(t, "deps")
	e := newEngine(t)

	res, err := e.InstallOrUpgrade(ctx, cluster, Release{
		Name: "family", Namespace: ns, CreateNamespace: true,
		Chart:    ChartRef{RepoURL: "oci://" + ociHost + "/deps/parent", Version: "1.0.0"},
		Registry: registryconn.Config{PlainHTTP: true},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Status).To(Equal("deployed"))
	g.Expect(configMapData(g, ctx, ns, "family-parent")).To(HaveKeyWithValue("childGreeting", "from-parent"))
	g.Expect(configMapData(g, ctx, ns, "family-child")).To(HaveKeyWithValue("greeting", "from-parent"))

	res, err = e.InstallOrUpgrade(ctx, cluster, Release{
		Name: "widgets", Namespace: ns,
		Chart:    ChartRef{RepoURL: "oci://" + ociHost + "/deps", Name: "widgets", Version: "1.0.0"},
		Registry: registryconn.Config{PlainHTTP: true},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Status).To(Equal("deployed"))
	widget := &unstructured.Unstructured{}
	widget.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.flotilla.dev", Version: "v1", Kind: "Widget"})
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "widgets"}, widget)).To(Succeed())
	g.Expect(widget.Object["spec"]).To(HaveKeyWithValue("size", BeNumerically("==", 3)))
}

// TestWaitAndAtomic waits for a release that becomes ready, and rolls back (uninstalls) one
// whose Deployment never does: the test cluster runs no controllers.
func TestWaitAndAtomic(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	helloChart("0.1.0").push(t, "wait")
	configOnly := testChart{name: "config", version: "0.1.0", files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  a: b\n",
	}}
	configOnly.push(t, "wait")
	e := newEngine(t)

	res, err := e.InstallOrUpgrade(ctx, cluster, Release{Name: "ready", Namespace: ns, Wait: true, Timeout: 20 * time.Second,
		Chart: ChartRef{RepoURL: "oci://" + ociHost + "/wait/config", Version: "0.1.0"}, Registry: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Status).To(Equal("deployed"))

	start := time.Now()
	_, err = e.InstallOrUpgrade(ctx, cluster, Release{Name: "never", Namespace: ns, Wait: true, Atomic: true, Timeout: 2 * time.Second,
		Chart: ChartRef{RepoURL: "oci://" + ociHost + "/wait/hello", Version: "0.1.0"}, Registry: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).To(HaveOccurred())
	t.Log(err)
	g.Expect(time.Since(start)).To(BeNumerically("<", 15*time.Second), "the timeout bounds the wait")
	_, err = e.Get(ctx, cluster, "never", ns)
	g.Expect(err).To(MatchError(ErrReleaseNotFound), "atomic uninstalled the failed first install")
	err = env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "never-config"}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
}

// TestAnInvalidObjectIsRefusedWithTheServersMessage installs a chart with a field the API does
// not know: the API server refuses it and the error names the field.
func TestAnInvalidObjectIsRefusedWithTheServersMessage(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	testChart{name: "invalid", version: "0.1.0", files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: invalid\ndatta:\n  a: b\n",
	}}.push(t, "invalid")
	_, err := newEngine(t).InstallOrUpgrade(ctx, cluster, Release{Name: "invalid", Namespace: ns,
		Chart: ChartRef{RepoURL: "oci://" + ociHost + "/invalid/invalid", Version: "0.1.0"}, Registry: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).To(MatchError(ContainSubstring(".datta: field not declared in schema")))
}

// TestSkipCRDsLeavesTheCRDsOut installs a chart with a CRD without its CRDs: the CRD is not
// created, and the release's object of it cannot be.
func TestSkipCRDsLeavesTheCRDsOut(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	gadgets := crdChart()
	gadgets.name = "gadgets"
	for p, content := range gadgets.files {
		gadgets.files[p] = strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget", "widget", "gadget").Replace(content)
	}
	gadgets.push(t, "skipcrds")
	_, err := newEngine(t).InstallOrUpgrade(ctx, cluster, Release{Name: "gadgets", Namespace: ns, SkipCRDs: true,
		Chart: ChartRef{RepoURL: "oci://" + ociHost + "/skipcrds/gadgets", Version: "1.0.0"}, Registry: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).To(MatchError(ContainSubstring(`no matches for kind "Gadget"`)))
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	err = env.Client.Get(ctx, ctrlclient.ObjectKey{Name: "gadgets.test.flotilla.dev"}, crd)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the CRD was not created: %v", err)
}

// TestConcurrentCallsForOneReleaseInstallItOnce runs InstallOrUpgrade for the same release from
// several goroutines: one installs, the others find it unchanged.
func TestConcurrentCallsForOneReleaseInstallItOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	helloChart("0.1.0").push(t, "sameone")
	e := newEngine(t)
	rel := Release{Name: "once", Namespace: ns, Chart: ChartRef{RepoURL: "oci://" + ociHost + "/sameone/hello", Version: "0.1.0"},
		Registry: registryconn.Config{PlainHTTP: true}}
	results := make(chan Result, 4)
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			res, err := e.InstallOrUpgrade(ctx, cluster, rel)
			results <- res
			errs <- err
		})
	}
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	var actions []Action
	for res := range results {
		actions = append(actions, res.Action)
		g.Expect(res.Revision).To(Equal(1))
	}
	g.Expect(actions).To(ConsistOf(ActionInstalled, ActionUnchanged, ActionUnchanged, ActionUnchanged))
	g.Expect(releaseSecrets(g, ctx, ns, "once")).To(HaveLen(1))
	g.Expect(e.Stats().ChartPulls).To(Equal(int64(1)))
}

// objectNames names objects as "Kind namespace/name".
func objectNames(objects []*unstructured.Unstructured) []string {
	names := make([]string, 0, len(objects))
	for _, o := range objects {
		names = append(names, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	return names
}
