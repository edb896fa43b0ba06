package packages_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// Attack 1 of issue 11: a tenant, with nothing but the flotilla-cluster-creator role in her
// namespace (a real client certificate), creates a Cluster named like the admin's and deletes
// it. Before cluster identities were namespace and name, that deleted the admin's Packages (and
// uninstalled them from the admin's cluster), its Packages namespace and its
// PackageBundleController: they are named after the cluster's name alone.
func TestATenantCannotUninstallThePackagesOfASameNamedCluster(t *testing.T) {
	ctx := context.Background()
	defaultBundle(t)
	admins := newCluster(t, "w-tenancy", "1.36")
	configs.set(ctrlclient.ObjectKeyFromObject(admins), workload.Config)
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(pbcOf(g, admins.Name).Spec.ActiveBundle).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())
	installed := newPackage(admins.Name, "hello-tenancy", "hello", "")
	installed.Spec.TargetNamespace = "tenancy"
	must(t, mgmt.Client.Create(ctx, installed))
	deployment := func() error {
		return workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "tenancy", Name: "hello-tenancy"}, &appsv1.Deployment{})
	}
	g.Eventually(func(g Gomega) {
		g.Expect(readyOf(g, packageOf(g, admins.Name, installed.Name).Status.Conditions).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(deployment()).To(Succeed())
	}, timeout, interval).Should(Succeed())

	// The admin's packages are all there: the Package, installed; its namespace; the PBC.
	untouched := func(g Gomega, owner *flotillav1.Cluster) {
		p := packageOf(g, admins.Name, installed.Name)
		g.Expect(p.DeletionTimestamp.IsZero()).To(BeTrue(), "the admin's Package is not being deleted")
		g.Expect(deployment()).To(Succeed(), "the admin's release is still installed")
		ns := &corev1.Namespace{}
		g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKey{Name: packagesv1.ClusterNamespace(admins.Name)}, ns)).To(Succeed())
		g.Expect(ns.DeletionTimestamp.IsZero()).To(BeTrue())
		pbc := pbcOf(g, admins.Name)
		g.Expect(pbc.DeletionTimestamp.IsZero()).To(BeTrue())
		for _, labels := range []map[string]string{ns.Labels, pbc.Labels} {
			g.Expect(labels).To(HaveKeyWithValue(packagesv1.ClusterNamespaceLabel, owner.Namespace))
			g.Expect(labels).To(HaveKeyWithValue(packagesv1.ClusterUIDLabel, string(owner.UID)))
		}
	}

	teamA := mgmt.NewNamespace(t)
	tenant := tenantClient(t, teamA, "tenant-a")
	hers := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: teamA, Name: admins.Name},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
		},
	}

	t.Run("her Cluster of the admin's cluster's name is refused, and there is nothing of hers to delete", func(t *testing.T) {
		g := NewWithT(t)
		err := tenant.Create(ctx, hers.DeepCopy())
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring(`"w-tenancy" is taken by a Cluster in namespace "` + admins.Namespace + `"`))
		g.Expect(apierrors.IsNotFound(tenant.Delete(ctx, hers.DeepCopy()))).To(BeTrue())
		g.Consistently(func(g Gomega) { untouched(g, admins) }, "3s", interval).Should(Succeed())
	})

	// Two Clusters of one name can still get past the webhook, created at the same moment; here
	// the admin's cluster is moved away with clusterctl, which leaves its packages behind, and her
	// Cluster takes the freed name. The labels decide whose the packages objects are.
	moved := admins.DeepCopy()
	g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(admins), moved)).To(Succeed())
	moved.Annotations = map[string]string{clusterctlv1.DeleteForMoveAnnotation: ""}
	g.Expect(mgmt.Client.Update(ctx, moved)).To(Succeed())
	g.Expect(mgmt.Client.Delete(ctx, moved)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(admins), &flotillav1.Cluster{}))
	}, timeout, interval).Should(BeTrue())

	t.Run("a Cluster that finds another Cluster's packages objects under its name says so and changes nothing", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(tenant.Create(ctx, hers)).To(Succeed())
		g.Eventually(func(g Gomega) {
			current := &flotillav1.Cluster{}
			g.Expect(tenant.Get(ctx, ctrlclient.ObjectKeyFromObject(hers), current)).To(Succeed())
			cond := meta.FindStatusCondition(current.Status.Conditions, packagesv1.PackagesReadyCondition)
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(packagesv1.NameConflictReason))
			g.Expect(cond.Message).To(ContainSubstring("namespace " + packagesv1.ClusterNamespace(admins.Name) +
				" belongs to Cluster " + admins.Namespace + "/" + admins.Name))
		}, timeout, interval).Should(Succeed())
		untouched(g, admins)
	})

	t.Run("deleting her Cluster deletes none of the other Cluster's packages", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(tenant.Delete(ctx, hers)).To(Succeed())
		g.Eventually(func() bool {
			return apierrors.IsNotFound(mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(hers), &flotillav1.Cluster{}))
		}, timeout, interval).Should(BeTrue())
		g.Consistently(func(g Gomega) { untouched(g, admins) }, "3s", interval).Should(Succeed())
	})

	t.Run("the admin's cluster moved back, with a new UID, takes its packages objects over", func(t *testing.T) {
		g := NewWithT(t)
		back := &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: admins.Namespace, Name: admins.Name}, Spec: admins.Spec}
		g.Expect(mgmt.Client.Create(ctx, back)).To(Succeed())
		g.Expect(back.UID).NotTo(Equal(admins.UID))
		configs.set(ctrlclient.ObjectKeyFromObject(back), workload.Config)
		g.Eventually(func(g Gomega) {
			untouched(g, back)
			current := &flotillav1.Cluster{}
			g.Expect(mgmt.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(back), current)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(current.Status.Conditions, packagesv1.PackagesReadyCondition)).To(BeTrue())
		}, timeout, interval).Should(Succeed())
	})
}

// tenantClient returns a client of a new user name, authenticated by a client certificate the
// API server trusts, with nothing but the flotilla-cluster-creator role in namespace.
func tenantClient(t *testing.T, namespace, name string) ctrlclient.Client {
	t.Helper()
	u, err := mgmt.AddClusterCreator(namespace, name)
	must(t, err)
	c, err := ctrlclient.New(u.Config, ctrlclient.Options{Scheme: mgmt.Scheme})
	must(t, err)
	return c
}
