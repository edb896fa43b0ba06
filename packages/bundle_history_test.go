package packages_test

import (
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// bundlesOf lists the names of the PackageBundles read from repository, by build.
func bundlesOf(g Gomega, repository string) []string {
	list := &packagesv1.PackageBundleList{}
	g.Expect(mgmt.Client.List(context.Background(), list, ctrlclient.InNamespace(packagesv1.PackagesNamespace))).To(Succeed())
	var names []string
	for _, b := range list.Items {
		if b.Spec.Source != nil && b.Spec.Source.Repository == repository {
			names = append(names, b.Name)
		}
	}
	slices.Sort(names)
	return names
}

func setActiveBundle(g Gomega, pbcName, bundleName string) {
	pbc := pbcOf(g, pbcName)
	before := pbc.DeepCopy()
	pbc.Spec.ActiveBundle = bundleName
	g.Expect(mgmt.Client.Patch(context.Background(), pbc, ctrlclient.MergeFrom(before))).To(Succeed())
}

func TestOldBundlesAreDeletedUnlessAClusterUsesThem(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const repo = "history/bundles"
	hello := helloChart("hello", "0.1.0").push(t, "")
	// Builds of their own: bundle names are shared by every source.
	b90 := pushBundle(t, repo, "1.36", 90, signingKey, pkg("hello", hello))
	b91 := pushBundle(t, repo, "1.36", 91, signingKey, pkg("hello", hello))
	g.Expect(mgmt.Client.Create(ctx, &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: "w-history", Namespace: packagesv1.PackagesNamespace},
		Spec:       packagesv1.PackageBundleControllerSpec{Source: &packagesv1.BundleSource{Registry: regHost, Repository: repo}},
	})).To(Succeed())
	newCluster(t, "w-history", "1.36")
	g.Eventually(func(g Gomega) {
		g.Expect(pbcOf(g, "w-history").Spec.ActiveBundle).To(Equal(b91))
		g.Expect(bundlesOf(g, repo)).To(Equal([]string{b90, b91}))
	}, timeout, interval).Should(Succeed())

	t.Run("newer bundles push the oldest out; the active one stays", func(t *testing.T) {
		g := NewWithT(t)
		for build := 92; build <= 94; build++ {
			pushBundle(t, repo, "1.36", build, signingKey, pkg("hello", hello))
		}
		requestCheck(g, "w-history", "1")
		g.Eventually(func(g Gomega) {
			// The three newest (the default history) and the active v1-36-91.
			g.Expect(bundlesOf(g, repo)).To(Equal([]string{"v1-36-91", "v1-36-92", "v1-36-93", "v1-36-94"}))
			g.Expect(pbcOf(g, "w-history").Status.State).To(Equal(packagesv1.BundleControllerUpgradeAvailable))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a bundle no longer active is deleted once it is out of the history", func(t *testing.T) {
		g := NewWithT(t)
		setActiveBundle(g, "w-history", "v1-36-94")
		g.Eventually(func(g Gomega) []string { return bundlesOf(g, repo) }, timeout, interval).
			Should(Equal([]string{"v1-36-92", "v1-36-93", "v1-36-94"}))
		g.Eventually(func(g Gomega) {
			g.Expect(pbcOf(g, "w-history").Status.State).To(Equal(packagesv1.BundleControllerActive))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("making a deleted bundle active again reads it from the registry again", func(t *testing.T) {
		g := NewWithT(t)
		setActiveBundle(g, "w-history", b90)
		g.Eventually(func(g Gomega) {
			g.Expect(bundlesOf(g, repo)).To(Equal([]string{"v1-36-90", "v1-36-92", "v1-36-93", "v1-36-94"}))
			g.Expect(bundleState(g, b90)).To(Equal(packagesv1.BundleValid))
			pbc := pbcOf(g, "w-history")
			g.Expect(readyOf(g, pbc.Status.Conditions).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(pbc.Status.State).To(Equal(packagesv1.BundleControllerUpgradeAvailable))
		}, timeout, interval).Should(Succeed())
	})
}
