package cluster_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/config"
)

// A tenant bound to flotilla-cluster-creator in one namespace creates a cluster of the
// ClusterClass an admin put there, with a real client certificate the API server authorizes; it
// can read the classes of its namespace and write none, and reaches no other namespace's.
func TestATenantCreatesAClusterOfAClassItCannotChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	g.Expect(config.InstallClusterCreatorRBAC(ctx, env.Client)).To(Succeed())
	ns, other := env.NewNamespace(t), env.NewNamespace(t)
	newClass(t, g, ns, servedInfra)
	otherClass := newClass(t, g, other, servedInfra)
	g.Expect(env.Client.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "tenant-creates-clusters", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: config.ClusterCreatorRoleName},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "tenant"}},
	})).To(Succeed())
	user, err := env.AddUser("tenant")
	g.Expect(err).NotTo(HaveOccurred())
	tenant, err := ctrlclient.New(user.Config, ctrlclient.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	t.Run("it reads the classes of its namespace", func(t *testing.T) {
		g := NewWithT(t)
		classes := &clusterv1.ClusterClassList{}
		g.Expect(tenant.List(ctx, classes, ctrlclient.InNamespace(ns))).To(Succeed())
		g.Expect(classes.Items).To(HaveLen(1))
	})

	t.Run("it creates a cluster of a class of its namespace", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(tenant.Create(ctx, tenantCluster(ns))).To(Succeed())
		g.Eventually(func(g Gomega) {
			capi := &clusterv1.Cluster{}
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "c-" + ns}, capi)).To(Succeed())
			g.Expect(capi.Spec.Topology.ClassRef.Name).To(Equal("dev"))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("it can write no class, no template and no Cluster API object", func(t *testing.T) {
		g := NewWithT(t)
		class := &clusterv1.ClusterClass{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns}}
		class.Spec = otherClass.Spec
		g.Expect(apierrors.IsForbidden(tenant.Create(ctx, class))).To(BeTrue(), "creating a ClusterClass")
		existing := &clusterv1.ClusterClass{}
		g.Expect(tenant.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "dev"}, existing)).To(Succeed())
		patch := ctrlclient.MergeFrom(existing.DeepCopy())
		existing.Labels = map[string]string{"changed": "by-tenant"}
		g.Expect(apierrors.IsForbidden(tenant.Patch(ctx, existing, patch))).To(BeTrue(), "changing a ClusterClass")
		for _, kind := range []struct{ apiVersion, kind string }{
			{"infrastructure.cluster.x-k8s.io/v1beta2", "DevMachineTemplate"},
			{"controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlaneTemplate"},
			{"bootstrap.cluster.x-k8s.io/v1beta2", "KubeadmConfigTemplate"},
		} {
			u := &unstructured.Unstructured{}
			u.SetAPIVersion(kind.apiVersion)
			u.SetKind(kind.kind)
			u.SetNamespace(ns)
			u.SetName("mine")
			_ = unstructured.SetNestedMap(u.Object, map[string]any{"template": map[string]any{"spec": map[string]any{}}}, "spec")
			g.Expect(apierrors.IsForbidden(tenant.Create(ctx, u))).To(BeTrue(), "creating a %s", kind.kind)
		}
		capi := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "direct", Namespace: ns}}
		capi.Spec.Topology = clusterv1.Topology{ClassRef: clusterv1.ClusterClassRef{Name: "dev"}, Version: "v1.36.3"}
		g.Expect(apierrors.IsForbidden(tenant.Create(ctx, capi))).To(BeTrue(), "creating a CAPI Cluster")
	})

	t.Run("it reaches no other namespace's class", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(apierrors.IsForbidden(tenant.Get(ctx, ctrlclient.ObjectKeyFromObject(otherClass), &clusterv1.ClusterClass{}))).To(BeTrue())
		g.Expect(apierrors.IsForbidden(tenant.Create(ctx, topologyCluster(other)))).To(BeTrue(), "creating a Cluster in another namespace")
		// A cluster names a class of its own namespace: the other namespace's "other" does not
		// exist for it.
		c := tenantCluster(ns)
		c.Name, c.Spec.Topology.Class = "c2-"+ns, "other"
		otherNamed := otherClass.DeepCopy()
		otherNamed.ObjectMeta = metav1.ObjectMeta{Name: "other", Namespace: other}
		g.Expect(env.Client.Create(ctx, otherNamed)).To(Succeed())
		err := tenant.Create(ctx, c)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring(`no ClusterClass of that name in namespace "` + ns + `"`))
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), &flotillav1.Cluster{}))).To(BeTrue())
	})
}

// tenantCluster is topologyCluster as a tenant writes it: without spec.managementCluster, which
// only an admin may name when the API server has no management Cluster to default it to.
func tenantCluster(ns string) *flotillav1.Cluster {
	c := topologyCluster(ns)
	c.Spec.ManagementCluster = flotillav1.ManagementClusterRef{}
	return c
}
