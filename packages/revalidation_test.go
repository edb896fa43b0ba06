package packages_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/bundle"
)

// A bundle's Valid condition speaks for the spec it was written for: once the spec changes, the
// bundle is not used until it has been verified again, even when the new spec is signed.
func TestABundleWhoseSpecChangedIsNotUsedUntilVerifiedAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const repo = "reverify/bundles"
	hello1 := helloChart("hello", "0.1.0").push(t, "")
	hello2 := helloChart("hello", "0.2.0").push(t, "")
	// Bundle names are shared by every source: a build of its own.
	name := pushBundle(t, repo, "1.36", 60, signingKey, pkg("hello", hello1))
	pbc := &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: "w-reverify", Namespace: packagesv1.PackagesNamespace},
		Spec:       packagesv1.PackageBundleControllerSpec{Source: &packagesv1.BundleSource{Registry: regHost, Repository: repo}},
	}
	g.Expect(mgmt.Client.Create(ctx, pbc)).To(Succeed())
	c := newCluster(t, "w-reverify", "1.36")
	configs.set(ctrlclient.ObjectKeyFromObject(c), workload.Config)
	p := newPackage("w-reverify", "hello", "hello", "")
	p.Spec.TargetNamespace = "reverify"
	// The cluster's packages namespace comes with its PackageBundleController's first check.
	g.Eventually(func() error { return mgmt.Client.Create(ctx, p) }, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		hello := packageOf(g, "w-reverify", "hello")
		g.Expect(readyOf(g, hello.Status.Conditions).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(hello.Status.CurrentVersion).To(Equal("0.1.0"))
	}, timeout, interval).Should(Succeed())

	// The bundle's spec changes (0.2.0 becomes the default version, signed as the publisher
	// would) while its verification is held: the Valid condition is still that of generation 1.
	release := verifier.hold(name)
	defer release()
	edited := bundle.Bundle{Name: name, KubernetesMinor: "1.36", Build: 60, Packages: []bundle.Package{pkg("hello", hello2, hello1)}}
	signed, err := bundle.Sign(edited, signingKey)
	g.Expect(err).NotTo(HaveOccurred())
	b := &packagesv1.PackageBundle{}
	key := ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: name}
	g.Expect(mgmt.Client.Get(ctx, key, b)).To(Succeed())
	b.Spec.Packages[0].Versions = append([]packagesv1.PackageVersion{{Version: hello2.Version, Digest: hello2.Digest, Schema: hello2.Schema}},
		b.Spec.Packages[0].Versions...)
	b.Spec.Signature = signed.Signature
	g.Expect(mgmt.Client.Update(ctx, b)).To(Succeed())
	g.Expect(b.Generation).To(BeNumerically(">", 1))
	g.Expect(b.Status.State).To(Equal(packagesv1.BundleValid), "the status still carries the old verdict")

	g.Eventually(func(g Gomega) {
		ready := readyOf(g, packageOf(g, "w-reverify", "hello").Status.Conditions)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("since it was last verified"))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		hello := packageOf(g, "w-reverify", "hello")
		g.Expect(hello.Status.CurrentVersion).To(Equal("0.1.0"))
		g.Expect(hello.Status.TargetVersion).NotTo(Equal("0.2.0"))
	}, 2*time.Second, interval).Should(Succeed())

	// Verified again, the new spec is used.
	release()
	g.Eventually(func(g Gomega) {
		hello := packageOf(g, "w-reverify", "hello")
		g.Expect(readyOf(g, hello.Status.Conditions).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(hello.Status.CurrentVersion).To(Equal("0.2.0"))
	}, timeout, interval).Should(Succeed())
}
