package publish_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/packages/bundle/publish"
	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// env is a real API server standing in for a workload cluster.
var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{SkipCRDs: true}, func(e *testenv.Environment) { env = e }))
}

// TestTheCatalogInstallsFromItsBundle installs the published catalog as the package driver does:
// verify the bundle, then install each package's chart by the digest the bundle pins, through
// the one Helm engine, dependencies first. The registry serves TLS and wants a user, so
// publishing and installing both authenticate.
func TestTheCatalogInstallsFromItsBundle(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Flotilla's registry as it serves other machines: TLS, and only its user.
	reg, err := charttest.StartSecureRegistry()
	g.Expect(err).NotTo(HaveOccurred())
	defer reg.Close()
	host := reg.Host
	conn := registryconn.Config{Username: reg.Username, Password: reg.Password, CAData: reg.CAPEM}
	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = publish.Publish(ctx, publish.Options{Registry: host, Repository: "flotilla", // the embedded catalog
		KubernetesMinors: []string{"1.36"}, Key: key, Connection: conn})
	g.Expect(err).NotTo(HaveOccurred())
	remoteOpts, err := bundle.RemoteOptions(conn)
	g.Expect(err).NotTo(HaveOccurred())
	s, err := bundle.Pull(ctx, host+"/flotilla:v1-36-1", remoteOpts...)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Verify(s, &key.PublicKey)).To(Succeed())

	engine := &helm.Engine{ChartCache: t.TempDir()}
	ns := env.NewNamespace(t)
	// The releases hold cluster-wide objects (a ClusterRole; a CRD, which Helm leaves behind on
	// uninstall): remove them, so that a repeated run (go test -count) starts from a clean cluster.
	t.Cleanup(func() {
		ctx := context.Background()
		for _, release := range []string{"stack", "greeter", "hello-flotilla"} {
			if err := engine.Uninstall(ctx, env.Config, release, ns); err != nil {
				t.Errorf("uninstalling %s: %v", release, err)
			}
		}
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "greetings.greeter.flotilla.dev"}}
		if err := env.Client.Delete(ctx, crd); ctrlclient.IgnoreNotFound(err) != nil {
			t.Errorf("deleting %s: %v", crd.Name, err)
			return
		}
		g.Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(crd), crd))
		}, time.Minute, 100*time.Millisecond).Should(BeTrue(), "%s is deleted", crd.Name)
	})
	hello, _ := s.Bundle.Package("hello-flotilla")
	_, err = (&helm.Engine{ChartCache: t.TempDir()}).InstallOrUpgrade(ctx, env.Config, helm.Release{
		Name: "anonymous", Namespace: ns, Registry: registryconn.Config{CAData: conn.CAData},
		Chart: helm.OCIChart(hello.Source.Registry, hello.Source.Repository, hello.Versions[0].Version, hello.Versions[0].Digest),
	})
	g.Expect(err).To(MatchError(ContainSubstring("credential")), "no chart without the registry's user")
	install := func(pkg, release string, values map[string]any) error {
		p, ok := s.Bundle.Package(pkg)
		g.Expect(ok).To(BeTrue(), pkg)
		v := p.Versions[0]
		_, err := engine.InstallOrUpgrade(ctx, env.Config, helm.Release{
			Name: release, Namespace: ns, Values: values, Registry: conn,
			Chart: helm.OCIChart(p.Source.Registry, p.Source.Repository, v.Version, v.Digest),
		})
		return err
	}

	g.Expect(install("hello-flotilla", "hello-flotilla", map[string]any{"message": "Hello, w1", "replicas": 2})).To(Succeed())
	var dep appsv1.Deployment
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "hello-flotilla"}, &dep)).To(Succeed())
	g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)))

	stack, _ := s.Bundle.Package("hello-stack")
	g.Expect(stack.Versions[0].Dependencies).To(ConsistOf("flotilla-greeter"))
	g.Expect(install("hello-stack", "too-early", nil)).To(MatchError(ContainSubstring("Greeting")),
		"without its dependency's CRD, hello-stack cannot install: the dependency is real")

	g.Expect(install("flotilla-greeter", "greeter", nil)).To(Succeed())
	g.Expect(install("hello-stack", "stack", nil)).To(Succeed())
	greeting := &unstructured.Unstructured{}
	greeting.SetGroupVersionKind(schema.GroupVersionKind{Group: "greeter.flotilla.dev", Version: "v1alpha1", Kind: "Greeting"})
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "stack"}, greeting)).To(Succeed())
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "greeter-example"}, greeting.DeepCopy())).To(Succeed())
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "stack-hello-flotilla"}, &appsv1.Deployment{})).To(Succeed(),
		"the vendored subchart is part of the hello-stack release")
}
