package helm

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// Helm alone discovers the cluster again for every install and upgrade; the engine keeps what it
// discovered per cluster, and discovers again when an action failed, so a kind that another tool
// added meanwhile is found by the retry.
func TestDiscoveryIsKeptPerClusterAndRefreshedAfterAFailure(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	helloChart("0.1.0").push(t, "discovery")
	gadgets := crdChart()
	gadgets.name = "gadgets"
	for p, content := range gadgets.files {
		gadgets.files[p] = strings.NewReplacer("widgets", "gadgets", "Widget", "Gadget", "widget", "gadget").Replace(content)
	}
	crd := gadgets.files["crds/widgets.yaml"]
	delete(gadgets.files, "crds/widgets.yaml")
	gadgets.push(t, "discovery")

	var discoveries atomic.Int64
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return discoveryCounter{rt, &discoveries} })
	e := newEngine(t)
	hello := func(name string) Release {
		return Release{Name: name, Namespace: ns, Registry: registryconn.Config{PlainHTTP: true},
			Chart: ChartRef{RepoURL: "oci://" + ociHost + "/discovery/hello", Version: "0.1.0"}}
	}
	_, err := e.InstallOrUpgrade(ctx, cfg, hello("first"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(discoveries.Load()).To(BeNumerically(">", 0), "the first action discovers the cluster")
	before := discoveries.Load()
	_, err = e.InstallOrUpgrade(ctx, cfg, hello("second"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(discoveries.Load()).To(Equal(before), "the next discovers nothing")

	// A chart of a kind the cluster does not serve fails; another tool adds the kind; the retry
	// finds it.
	rel := Release{Name: "gadgets", Namespace: ns, Registry: registryconn.Config{PlainHTTP: true},
		Chart: ChartRef{RepoURL: "oci://" + ociHost + "/discovery/gadgets", Version: "1.0.0"}}
	_, err = e.InstallOrUpgrade(ctx, cfg, rel)
	g.Expect(err).To(MatchError(ContainSubstring("Gadget")))
	obj := &unstructured.Unstructured{}
	g.Expect(yaml.Unmarshal([]byte(crd), &obj.Object)).To(Succeed())
	g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(obj), obj)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		g.Expect(conds).To(ContainElement(HaveKeyWithValue("type", "Established")))
	}).Should(Succeed())
	res, err := e.InstallOrUpgrade(ctx, cfg, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionInstalled))
}

// discoveryCounter counts the requests for the API groups' discovery documents.
type discoveryCounter struct {
	next  http.RoundTripper
	count *atomic.Int64
}

func (d discoveryCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && (req.URL.Path == "/api" || req.URL.Path == "/apis") {
		d.count.Add(1)
	}
	return d.next.RoundTrip(req)
}
