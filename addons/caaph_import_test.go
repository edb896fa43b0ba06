package addons_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/addons/caaph"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/internal/charttest"
)

// installCAAPHCRDs installs CAAPH's two kinds with their short names, as schemaless CRDs: the
// import reads them as unstructured objects.
func installCAAPHCRDs(g Gomega) {
	ctx := context.Background()
	for _, kind := range []string{"HelmChartProxy", "HelmReleaseProxy"} {
		plural := map[string]string{"HelmChartProxy": "helmchartproxies", "HelmReleaseProxy": "helmreleaseproxies"}[kind]
		short := map[string]string{"HelmChartProxy": "hcp", "HelmReleaseProxy": "hrp"}[kind]
		preserve := true
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: plural + ".addons.cluster.x-k8s.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "addons.cluster.x-k8s.io", Scope: apiextensionsv1.NamespaceScoped,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, ShortNames: []string{short}},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1alpha1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: &preserve}}}},
			},
		}
		if err := env.Client.Create(ctx, crd); !apierrors.IsAlreadyExists(err) {
			g.Expect(err).NotTo(HaveOccurred())
		}
		g.Eventually(func(g Gomega) {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("addons.cluster.x-k8s.io/v1alpha1")
			list.SetKind(kind + "List")
			g.Expect(env.Client.List(ctx, list)).To(Succeed())
		}, timeout, interval).Should(Succeed())
	}
}

func caaphObject(g Gomega, y string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(y), &u.Object)).To(Succeed())
	return u
}

// A release CAAPH installed (Helm, with the values its template rendered, under the name it
// generated) is adopted by the Flotilla proxy `flotilla addons import --from-caaph` writes: the
// release stays at revision 1.
func TestImportFromCAAPHAdoptsItsReleasesWithoutANewRevision(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]
	installCAAPHCRDs(g)
	hello := charttest.Hello("1.0.0")
	repoURL := charttest.Repository{Charts: []charttest.Chart{hello}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	releaseNS := "caaph-" + ns

	// What CAAPH left: its proxy, its release proxy (a generated release name), the release.
	g.Expect(env.Client.Create(ctx, caaphObject(g, `apiVersion: addons.cluster.x-k8s.io/v1alpha1
kind: HelmChartProxy
metadata: {name: hello, namespace: `+ns+`}
spec:
  clusterSelector: {matchLabels: {env: prod}}
  repoURL: `+repoURL+`
  chartName: hello
  version: 1.0.0
  namespace: `+releaseNS+`
  valuesTemplate: "clusterName: {{ .Cluster.metadata.name }}\nreplicas: 1\n"
  options: {install: {createNamespace: true}}
`))).To(Succeed())
	g.Expect(env.Client.Create(ctx, caaphObject(g, `apiVersion: addons.cluster.x-k8s.io/v1alpha1
kind: HelmReleaseProxy
metadata: {name: hello-w1-abcde, namespace: `+ns+`, labels: {`+caaph.ProxyNameLabel+`: hello}}
spec: {clusterRef: {name: w1}, releaseName: hello-1700000000, namespace: `+releaseNS+`}
`))).To(Succeed())
	kubeconfig := filepath.Join(t.TempDir(), "w1.kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, w.Kubeconfig, 0o600)).To(Succeed())
	getter := genericclioptions.NewConfigFlags(false)
	getter.KubeConfig = &kubeconfig
	ac := &action.Configuration{}
	g.Expect(ac.Init(getter, releaseNS, "secret")).To(Succeed())
	ch, err := loader.LoadArchive(bytes.NewReader(charttest.Package(t, hello)))
	g.Expect(err).NotTo(HaveOccurred())
	in := action.NewInstall(ac)
	in.ReleaseName, in.Namespace, in.CreateNamespace, in.WaitStrategy = "hello-1700000000", releaseNS, true, kube.HookOnlyStrategy
	_, err = in.RunWithContext(ctx, ch, map[string]any{"clusterName": "w1", "replicas": 1})
	g.Expect(err).NotTo(HaveOccurred())

	mgmtKubeconfig := filepath.Join(t.TempDir(), "mgmt.kubeconfig")
	g.Expect(os.WriteFile(mgmtKubeconfig, env.Kubeconfig, 0o600)).To(Succeed())
	cli, err := client.New(t.TempDir(), t.TempDir(), io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	imported, err := cli.ImportFromCAAPH(ctx, mgmtKubeconfig, ns, true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(imported).To(ConsistOf(client.ImportedAddon{Namespace: ns, Name: "hello", ReleaseName: "hello-1700000000", ReleaseNamespace: releaseNS, Action: "would create"}))
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "hello"}, &addonsv1.HelmChartProxy{}))).To(BeTrue(), "a dry run writes nothing")

	imported, err = cli.ImportFromCAAPH(ctx, mgmtKubeconfig, ns, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(imported[0].Action).To(Equal("created"))
	hrp := eventuallyReady(g, ns, "hello", "w1")
	g.Expect(hrp.Status.Revision).To(BeEquivalentTo(1), "adopted, not upgraded")
	secrets := &corev1.SecretList{}
	g.Expect(w.Client.List(ctx, secrets, ctrlclient.InNamespace(releaseNS), ctrlclient.MatchingLabels{"owner": "helm", "name": "hello-1700000000"})).To(Succeed())
	g.Expect(secrets.Items).To(HaveLen(1), "one revision: no reinstall, no upgrade")

	imported, err = cli.ImportFromCAAPH(ctx, mgmtKubeconfig, ns, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(imported[0].Action).To(Equal("exists"), "importing again leaves the Flotilla proxy alone")
}

// With CAAPH's CRDs installed next to Flotilla's, each short name kubectl expands (from the API
// server's discovery) names one resource: hcp and hrp CAAPH's, fhcp and fhrp Flotilla's.
func TestFlotillasShortNamesDoNotClashWithCAAPHs(t *testing.T) {
	g := NewWithT(t)
	installCAAPHCRDs(g)
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		lists, err := dc.ServerPreferredResources()
		g.Expect(err).NotTo(HaveOccurred())
		owners := map[string][]string{}
		for _, l := range lists {
			for _, r := range l.APIResources {
				for _, short := range r.ShortNames {
					owners[short] = append(owners[short], r.Name+"."+strings.Split(l.GroupVersion, "/")[0])
				}
			}
		}
		g.Expect(owners).To(HaveKeyWithValue("hcp", []string{"helmchartproxies.addons.cluster.x-k8s.io"}))
		g.Expect(owners).To(HaveKeyWithValue("hrp", []string{"helmreleaseproxies.addons.cluster.x-k8s.io"}))
		g.Expect(owners).To(HaveKeyWithValue("fhcp", []string{"helmchartproxies.addons.flotilla.dev"}))
		g.Expect(owners).To(HaveKeyWithValue("fhrp", []string{"helmreleaseproxies.addons.flotilla.dev"}))
	}, timeout, interval).Should(Succeed())
}
