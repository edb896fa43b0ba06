package packages_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/reconcilers/clusterlifecycle"
	"github.com/flotilla-dev/flotilla/pkg/predelete"
)

// preDeleteChart is the hello chart with a pre-delete hook Job, <release>-cleanup: Helm's
// uninstall waits until the test completes it.
func preDeleteChart(name, version string) chart {
	return hookJobChart(name, version, "cleanup", "pre-delete")
}

// completeJob marks a Job complete, as the Job controller would.
func completeJob(g Gomega, ns, name string) {
	job := &batchv1.Job{}
	g.Expect(workload.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: ns, Name: name}, job)).To(Succeed())
	now := metav1.Now()
	job.Status.StartTime, job.Status.CompletionTime, job.Status.Succeeded = &now, &now, 1
	job.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	g.Expect(workload.Client.Status().Update(context.Background(), job)).To(Succeed())
}

// TestADeletedClusterKeepsItsControlPlaneUntilItsPackagesAreUninstalled deletes a Cluster whose
// Package's chart has a pre-delete hook Job: the packages pre-delete hook, which keeps the
// Cluster's control plane (package predelete), stays on the Cluster while Helm waits for the
// Job, and goes once the release is uninstalled; a Package with uninstallOnClusterDelete Skip is
// not uninstalled.
func TestADeletedClusterKeepsItsControlPlaneUntilItsPackagesAreUninstalled(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name, repo = "w-teardown", "teardown/bundles"
	cleanup := preDeleteChart("cleanup", "0.1.0").push(t, "")
	hello := helloChart("hello", "0.1.0").push(t, "")
	pushBundle(t, repo, "1.36", 97, signingKey, pkg("cleanup", cleanup), pkg("hello", hello))
	g.Expect(mgmt.Client.Create(ctx, &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: packagesv1.PackagesNamespace},
		Spec:       packagesv1.PackageBundleControllerSpec{Source: &packagesv1.BundleSource{Registry: regHost, Repository: repo}},
	})).To(Succeed())
	c := newCluster(t, name, "1.36")
	configs.set(ctrlclient.ObjectKeyFromObject(c), workload.Config)
	t.Cleanup(func() { deleteCluster(t, c) })
	hook := predelete.Annotation(clusterlifecycle.PreDeleteHook)
	cluster := func(g Gomega) *flotillav1.Cluster {
		got := &flotillav1.Cluster{}
		g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), got)).To(Succeed())
		return got
	}
	g.Eventually(func(g Gomega) {
		g.Expect(cluster(g).Annotations).To(HaveKey(hook))
		g.Expect(pbcOf(g, name).Spec.ActiveBundle).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())

	withHook := newPackage(name, "cleanup", "cleanup", "")
	withHook.Spec.TargetNamespace = "teardown"
	skipped := newPackage(name, "kept", "hello", "")
	skipped.Spec.TargetNamespace = "teardown"
	skipped.Spec.UninstallOnClusterDelete = flotillav1.UninstallSkip
	for _, p := range []*packagesv1.Package{withHook, skipped} {
		g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		g.Expect(packageOf(g, name, "cleanup").Status.State).To(Equal(packagesv1.PackageInstalled))
		g.Expect(packageOf(g, name, "kept").Status.State).To(Equal(packagesv1.PackageInstalled))
	}, timeout, interval).Should(Succeed())

	g.Expect(mgmt.Client.Delete(ctx, c)).To(Succeed())
	// Helm runs the pre-delete hook and waits for it; the hook stays on the Cluster meanwhile.
	g.Eventually(func(g Gomega) {
		g.Expect(workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "teardown", Name: "cleanup-cleanup"}, &batchv1.Job{})).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(cluster(g).Annotations).To(HaveKey(hook))
		g.Expect(releaseStatuses(g, "teardown", "cleanup")).NotTo(BeEmpty())
	}, 2*time.Second, interval).Should(Succeed())

	g.Eventually(func(g Gomega) { completeJob(g, "teardown", "cleanup-cleanup") }, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got := &flotillav1.Cluster{}
		err := mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), got)
		if err == nil {
			g.Expect(got.Annotations).NotTo(HaveKey(hook))
		}
		g.Expect(releaseStatuses(g, "teardown", "cleanup")).To(BeEmpty(), "uninstalled before the hook went")
	}, timeout, interval).Should(Succeed())
	g.Expect(releaseStatuses(g, "teardown", "kept")).To(Equal([]string{"deployed"}), "uninstallOnClusterDelete Skip leaves the release")
}

// TestEachUninstallPolicyOfAPackageOfAnUnreachableClusterBeingDeleted deletes a Cluster that no
// longer answers, with one Package of each uninstallOnClusterDelete: Skip goes at once, untried
// (ReleaseLeftWithCluster), BestEffort after its one try (Orphaned), and Ensure is tried until
// uninstallTimeout after the Cluster's deletion, then orphaned. The addons test
// TestEachUninstallPolicyOfAnAddonOfAnUnreachableClusterBeingDeleted asserts the same of
// HelmReleaseProxies (package predelete decides for both).
func TestEachUninstallPolicyOfAPackageOfAnUnreachableClusterBeingDeleted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name, repo, target = "w-policy", "policy/bundles", "uninstall-policy"
	hello := helloChart("hello", "0.1.0").push(t, "")
	pushBundle(t, repo, "1.36", 98, signingKey, pkg("hello", hello))
	g.Expect(mgmt.Client.Create(ctx, &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: packagesv1.PackagesNamespace},
		Spec:       packagesv1.PackageBundleControllerSpec{Source: &packagesv1.BundleSource{Registry: regHost, Repository: repo}},
	})).To(Succeed())
	c := newCluster(t, name, "1.36")
	configs.set(ctrlclient.ObjectKeyFromObject(c), workload.Config)
	t.Cleanup(func() { deleteCluster(t, c) })
	g.Eventually(func(g Gomega) { g.Expect(pbcOf(g, name).Spec.ActiveBundle).NotTo(BeEmpty()) }, timeout, interval).Should(Succeed())

	policies := map[string]flotillav1.UninstallOnClusterDelete{
		"skip": flotillav1.UninstallSkip, "best-effort": flotillav1.UninstallBestEffort, "ensure": flotillav1.UninstallEnsure,
	}
	for pkgName, policy := range policies {
		p := newPackage(name, pkgName, "hello", "")
		p.Spec.TargetNamespace, p.Spec.UninstallOnClusterDelete = target, policy
		g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for pkgName := range policies {
			g.Expect(packageOf(g, name, pkgName).Status.State).To(Equal(packagesv1.PackageInstalled))
		}
	}, timeout, interval).Should(Succeed())

	configs.drop(ctrlclient.ObjectKeyFromObject(c))
	g.Expect(mgmt.Client.Delete(ctx, c)).To(Succeed())
	g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), c)).To(Succeed())
	deadline := c.DeletionTimestamp.Add(uninstallTimeout)
	gone := func(pkgName string) func() bool {
		return func() bool {
			err := mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.ClusterNamespace(name), Name: pkgName}, &packagesv1.Package{})
			return apierrors.IsNotFound(err)
		}
	}
	g.Eventually(gone("skip"), time.Until(deadline), interval).Should(BeTrue(), "Skip does not wait")
	g.Eventually(gone("best-effort"), time.Until(deadline), interval).Should(BeTrue(), "BestEffort does not wait")
	g.Expect(gone("ensure")()).To(BeFalse(), "Ensure waits until the deadline")
	g.Eventually(gone("ensure"), timeout, interval).Should(BeTrue())
	g.Expect(time.Now()).To(BeTemporally(">=", deadline))
	g.Expect(time.Now()).To(BeTemporally("<", deadline.Add(2*time.Second)), "Ensure gives up at the deadline counted from the Cluster's deletion")

	g.Expect(packageEventReasons(g, name, "skip")).To(ContainElement(predelete.ReasonLeftWithCluster), "left untried")
	g.Expect(packageEventReasons(g, name, "best-effort")).To(ContainElement(predelete.ReasonOrphaned))
	g.Expect(packageEventReasons(g, name, "ensure")).To(ContainElement(predelete.ReasonOrphaned))
	for pkgName := range policies {
		g.Expect(releaseStatuses(g, target, pkgName)).To(Equal([]string{"deployed"}), "%s: the release is left in the cluster", pkgName)
	}
}

// packageEventReasons returns the reasons of the Events regarding Package name of cluster.
func packageEventReasons(g Gomega, cluster, name string) []string {
	list := &eventsv1.EventList{}
	g.Expect(mgmt.Client.List(context.Background(), list, ctrlclient.InNamespace(packagesv1.ClusterNamespace(cluster)))).To(Succeed())
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Package" && e.Regarding.Name == name {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}
