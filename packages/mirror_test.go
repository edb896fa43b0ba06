package packages_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// A PackageBundleController with a registry mirror reads its bundles and installs its charts
// from the mirror only, with the mirror's own credentials and CA: the registry the source and
// the bundle name (a port nothing listens on) is never reached. (That the original's credentials
// never go to the mirror is registryconn's TestAMirrorTakesEveryPullWithItsOwnConnection.)
func TestAMirrorServesEveryBundleAndChartWithTheOriginalUnreachable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const original, prefix = "127.0.0.1:1", "copies"
	mirror, err := charttest.StartSecureRegistry()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(mirror.Close)

	// The mirror holds the original's repositories at the same paths below its prefix.
	c := helloChart("mirrored", "0.1.0")
	digest := mirror.Push(t, mirror.Host+"/"+prefix+"/charts", c.Chart)
	// A build of its own: bundle names are shared by every source.
	name, err := bundle.Name("1.36", 75)
	g.Expect(err).NotTo(HaveOccurred())
	signed, err := bundle.Sign(bundle.Bundle{Name: name, KubernetesMinor: "1.36", Build: 75, Packages: []bundle.Package{{
		Name:     "mirrored",
		Source:   bundle.Source{Registry: original, Repository: "charts/mirrored"},
		Versions: []bundle.Version{{Version: "0.1.0", Digest: digest, Schema: c.Files["values.schema.json"]}},
	}}}, signingKey)
	g.Expect(err).NotTo(HaveOccurred())
	opts, err := bundle.RemoteOptions(registryconn.Config{Username: mirror.Username, Password: mirror.Password, CAData: mirror.CAPEM})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Push(ctx, mirror.Host+"/"+prefix+"/offline/bundles", signed, opts...)).To(Succeed())

	g.Expect(mgmt.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "mirror-credentials", Namespace: packagesv1.PackagesNamespace},
		Data:       map[string][]byte{"username": []byte(mirror.Username), "password": []byte(mirror.Password), "ca.crt": mirror.CAPEM},
	})).To(Succeed())
	pbc := &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: "w-mirror", Namespace: packagesv1.PackagesNamespace},
		Spec: packagesv1.PackageBundleControllerSpec{
			Source:         &packagesv1.BundleSource{Registry: original, Repository: "offline/bundles"},
			RegistryMirror: &packagesv1.RegistryMirror{Registry: mirror.Host + "/" + prefix, CredentialsSecret: "mirror-credentials"},
		},
	}
	g.Expect(mgmt.Client.Create(ctx, pbc)).To(Succeed())
	cluster := newCluster(t, "w-mirror", "1.36")
	configs.set(ctrlclient.ObjectKeyFromObject(cluster), workload.Config)

	g.Eventually(func(g Gomega) {
		pbc := pbcOf(g, "w-mirror")
		g.Expect(pbc.Spec.ActiveBundle).To(Equal(name))
		g.Expect(pbc.Status.RegistryMirror).To(Equal(mirror.Host + "/" + prefix))
	}, timeout, interval).Should(Succeed())

	p := newPackage("w-mirror", "mirrored", "mirrored", "")
	p.Spec.TargetNamespace = "mirrored"
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		p := packageOf(g, "w-mirror", "mirrored")
		g.Expect(readyOf(g, p.Status.Conditions).Status).To(Equal(metav1.ConditionTrue), readyOf(g, p.Status.Conditions).Message)
	}, timeout, interval).Should(Succeed())
	g.Expect(workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "mirrored", Name: "mirrored"}, &appsv1.Deployment{})).To(Succeed())
}
