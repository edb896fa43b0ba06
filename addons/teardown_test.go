package addons_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flotilla-dev/flotilla/addons/desired"
	"github.com/flotilla-dev/flotilla/addons/reconcilers/clusterteardown"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/predelete"
)

// TestADeletedClusterKeepsItsControlPlaneUntilItsAddonsAreUninstalled deletes a Flotilla
// Cluster, standing in for its reconciler (a finalizer of the test's holds it, and the test marks
// its CAPI Cluster for teardown as the reconciler does while hooks are set): the addons hook stays
// on the Cluster until the releases of its proxies are uninstalled, except the one whose
// uninstallOnClusterDelete is Skip, which stays installed.
func TestADeletedClusterKeepsItsControlPlaneUntilItsAddonsAreUninstalled(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	capi := createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	const standIn = "test.flotilla.dev/cluster-reconciler"
	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: ns, Finalizers: []string{standIn}},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	hook := predelete.Annotation(clusterteardown.PreDeleteHook)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Annotations).To(HaveKey(hook))
	}, timeout, interval).Should(Succeed())

	web := proxy(ns, "web")
	web.Spec.UninstallOnClusterDelete = flotillav1.UninstallEnsure
	kept := proxy(ns, "kept")
	kept.Spec.UninstallOnClusterDelete = flotillav1.UninstallSkip
	for _, p := range []*addonsv1.HelmChartProxy{web, kept} {
		g.Expect(env.Client.Create(ctx, p)).To(Succeed())
		eventuallyReady(g, ns, p.Name, "w1")
	}
	// The uninstall fails for a while (less than uninstallTimeout): Ensure retries it, and the
	// hook holds the teardown meanwhile.
	fake.SetErrors(errors.New("the workload API server is overloaded"), nil)
	defer fake.SetErrors(nil, nil)

	g.Expect(env.Client.Delete(ctx, c)).To(Succeed())
	patch := ctrlclient.MergeFrom(capi.DeepCopy())
	metav1.SetMetaDataAnnotation(&capi.ObjectMeta, flotillav1.TeardownAnnotation, "")
	g.Expect(env.Client.Patch(ctx, capi, patch)).To(Succeed())

	g.Eventually(func(g Gomega) {
		_, _, installed := fakeRelease(ns, "w1", "hello", "kept")
		g.Expect(installed).To(BeTrue())
		err := env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: desired.ReleaseProxyName("kept", "w1")}, &addonsv1.HelmReleaseProxy{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Skip lets the HelmReleaseProxy go without an uninstall")
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Annotations).To(HaveKey(hook))
		_, _, installed := fakeRelease(ns, "w1", "hello", "web")
		g.Expect(installed).To(BeTrue())
	}, time.Second, interval).Should(Succeed())

	fake.SetErrors(nil, nil)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), c)).To(Succeed())
		g.Expect(c.Annotations).NotTo(HaveKey(hook))
	}, timeout, interval).Should(Succeed())
	_, _, installed := fakeRelease(ns, "w1", "hello", "web")
	g.Expect(installed).To(BeFalse(), "uninstalled before the hook went")
	_, _, installed = fakeRelease(ns, "w1", "hello", "kept")
	g.Expect(installed).To(BeTrue())

	patch = ctrlclient.MergeFrom(c.DeepCopy())
	controllerutil.RemoveFinalizer(c, standIn)
	g.Expect(env.Client.Patch(ctx, c, patch)).To(Succeed())
}

// TestEachUninstallPolicyOfAnAddonOfAnUnreachableClusterBeingDeleted deletes a Flotilla Cluster
// that no longer answers, with one HelmChartProxy of each uninstallOnClusterDelete, standing in
// for its reconciler, which marks the CAPI Cluster for teardown 3 s after the deletion: Skip
// goes untried (ReleaseLeftWithCluster), BestEffort after its one try (Orphaned), and Ensure is
// tried until uninstallTimeout after the Flotilla Cluster's deletion (not the later deletion of
// its HelmReleaseProxy), then orphaned. The packages test
// TestEachUninstallPolicyOfAPackageOfAnUnreachableClusterBeingDeleted asserts the same of
// Packages (package predelete decides for both).
func TestEachUninstallPolicyOfAnAddonOfAnUnreachableClusterBeingDeleted(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	capi := createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	const standIn = "test.flotilla.dev/cluster-reconciler"
	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "w1", Namespace: ns, Finalizers: []string{standIn}},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	defer func() {
		patch := ctrlclient.MergeFrom(c.DeepCopy())
		controllerutil.RemoveFinalizer(c, standIn)
		g.Expect(env.Client.Patch(ctx, c, patch)).To(Succeed())
	}()

	policies := map[string]flotillav1.UninstallOnClusterDelete{
		"skip": flotillav1.UninstallSkip, "best-effort": flotillav1.UninstallBestEffort, "ensure": flotillav1.UninstallEnsure,
	}
	for name, policy := range policies {
		p := proxy(ns, name)
		p.Spec.UninstallOnClusterDelete = policy
		g.Expect(env.Client.Create(ctx, p)).To(Succeed())
		eventuallyReady(g, ns, name, "w1")
	}

	key := ctrlclient.ObjectKeyFromObject(capi)
	clusters.setUnreachable(key, true)
	defer clusters.setUnreachable(key, false)
	g.Expect(env.Client.Delete(ctx, c)).To(Succeed())
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), c)).To(Succeed())
	deadline := c.DeletionTimestamp.Add(uninstallTimeout)
	// The mark comes late (3 s after the deletion, to the second the API server stamps): the
	// HelmReleaseProxies' deletion comes that much after the Cluster's, and a deadline counted
	// from it would come that much too late.
	time.Sleep(time.Until(c.DeletionTimestamp.Add(3 * time.Second)))
	patch := ctrlclient.MergeFrom(capi.DeepCopy())
	metav1.SetMetaDataAnnotation(&capi.ObjectMeta, flotillav1.TeardownAnnotation, "")
	g.Expect(env.Client.Patch(ctx, capi, patch)).To(Succeed())

	hrp := func(name string) *addonsv1.HelmReleaseProxy {
		return &addonsv1.HelmReleaseProxy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: desired.ReleaseProxyName(name, "w1")}}
	}
	gone := func(name string) func() bool {
		return func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(hrp(name)), &addonsv1.HelmReleaseProxy{}))
		}
	}
	g.Eventually(gone("skip"), time.Until(deadline), interval).Should(BeTrue(), "Skip does not wait")
	g.Eventually(gone("best-effort"), time.Until(deadline), interval).Should(BeTrue(), "BestEffort does not wait")
	g.Expect(gone("ensure")()).To(BeFalse(), "Ensure waits until the deadline")
	g.Eventually(gone("ensure"), timeout, interval).Should(BeTrue())
	g.Expect(time.Now()).To(BeTemporally(">=", deadline))
	g.Expect(time.Now()).To(BeTemporally("<", deadline.Add(2*time.Second)), "Ensure gives up at the deadline counted from the Cluster's deletion")

	g.Expect(eventReasons(g, hrp("skip"))).To(ContainElement(predelete.ReasonLeftWithCluster), "left untried")
	g.Expect(eventReasons(g, hrp("best-effort"))).To(ContainElement(predelete.ReasonOrphaned))
	g.Expect(eventReasons(g, hrp("ensure"))).To(ContainElement(predelete.ReasonOrphaned))
	for name := range policies {
		_, _, installed := fakeRelease(ns, "w1", "hello", name)
		g.Expect(installed).To(BeTrue(), "%s: the release is left in the cluster", name)
	}
}
