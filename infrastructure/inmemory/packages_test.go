package inmemory_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// `flotilla install package` reaches an in-memory cluster: the manager's packages component
// verifies a signed bundle from a registry on this machine, and installs the package's chart
// with Helm into the cluster, through the gateway, where its Deployment becomes available.
func TestAPackageInstallsIntoAnInMemoryCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	publishBundle(t, g, "1.36")
	cl := createCluster(t, g, "p1", "1.36", 1)
	waitReady(g, cl)
	ensureManagementCluster(t, g)
	kubeconfig := writeKubeconfig(t, "mgmt", env.Kubeconfig)
	cli, err := client.New(t.TempDir(), t.TempDir(), &testWriter{t})
	g.Expect(err).NotTo(HaveOccurred())
	cli.Version = managerVersion

	// The cluster's packages namespace and PackageBundleController come with the cluster.
	g.Eventually(func(g Gomega) {
		_, err := cli.InstallPackage(ctx, kubeconfig, client.InstallPackageOptions{Cluster: cl.Name, Package: "hello"})
		g.Expect(err).NotTo(HaveOccurred())
	}, readyTimeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		p := &packagesv1.Package{}
		g.Expect(c.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.ClusterNamespace(cl.Name), Name: "hello"}, p)).To(Succeed())
		ready := meta.FindStatusCondition(p.Status.Conditions, packagesv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
		g.Expect(p.Status.State).To(Equal(packagesv1.PackageInstalled))
	}, readyTimeout, interval).Should(Succeed())

	wc, _ := workloadClient(g, cl)
	deploy := &appsv1.Deployment{}
	g.Expect(wc.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.DefaultTargetNamespace, Name: "hello"}, deploy)).To(Succeed())
	g.Expect(deploy.Status.AvailableReplicas).To(BeNumerically(">", 0))
}

// publishBundle pushes charttest's hello chart and a bundle of Kubernetes minor holding it,
// signed, to a registry on loopback, and points package-defaults at them.
func publishBundle(t *testing.T, g Gomega, minor string) {
	t.Helper()
	ctx := context.Background()
	host, stop := charttest.StartRegistry()
	t.Cleanup(stop)
	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	pub, err := bundle.EncodePublicKey(&key.PublicKey)
	g.Expect(err).NotTo(HaveOccurred())

	hello := charttest.Hello("0.1.0")
	digest := charttest.Push(t, host+"/charts", hello)
	name, err := bundle.Name(minor, 1)
	g.Expect(err).NotTo(HaveOccurred())
	signed, err := bundle.Sign(bundle.Bundle{Name: name, KubernetesMinor: minor, Build: 1, Packages: []bundle.Package{{
		Name:     "hello",
		Source:   bundle.Source{Registry: host, Repository: "charts/hello"},
		Versions: []bundle.Version{{Version: hello.Version, Digest: digest, Schema: hello.Files["values.schema.json"]}},
	}}}, key)
	g.Expect(err).NotTo(HaveOccurred())
	opts, err := bundle.RemoteOptions(registryconn.Config{PlainHTTP: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Push(ctx, host+"/flotilla/bundles", signed, opts...)).To(Succeed())

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: packagesv1.PackagesNamespace}}
	if err := c.Create(ctx, ns); !apierrors.IsAlreadyExists(err) {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: packagesv1.DefaultsConfigMapName, Namespace: packagesv1.PackagesNamespace},
		Data: map[string]string{
			packagesv1.DefaultsRegistryKey:   host,
			packagesv1.DefaultsRepositoryKey: "flotilla/bundles",
			packagesv1.DefaultsPublicKeyKey:  string(pub),
			packagesv1.DefaultsPlainHTTPKey:  "true",
		},
	})).To(Succeed())
}

// testWriter writes the CLI's output to the test's log.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}
