package config_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/config"
)

// identitiesWithClusterWideSecretWrites are the identities whose roles may write Secrets in
// every namespace, each for a reason docs/security.md gives: Cluster API core (the kubeconfig
// and CA Secrets of the clusters it creates), kubeadm (bootstrap data, certificates, kubeconfigs),
// the local provider (the CA and kubeconfig of a local control plane), Cluster API's in-memory
// provider (the CA, etcd and bootstrap data Secrets of its clusters) and the Flotilla Cluster
// reconciler (the kubeconfig Secret a workload cluster's owner reads). A new one fails the test
// until it is justified there and added here.
var identitiesWithClusterWideSecretWrites = []string{"capi", "cluster", "inmemory", "kubeadm", "local"}

func TestNoIdentityOfTheManagerIsAnAdmin(t *testing.T) {
	g := NewWithT(t)
	g.Expect(config.IdentityGroups()).NotTo(ContainElement("system:masters"))
	objs, err := config.ManagerRBAC()
	g.Expect(err).NotTo(HaveOccurred())
	ids, err := config.ManagerIdentities()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids).To(ContainElements("manager", "capi", "kubeadm", "local", "packet", "cluster", "gitops", "kubeconfigaccess", "addons", "packages"))

	var withSecretWrites []string
	for _, obj := range objs {
		switch o := obj.(type) {
		case *rbacv1.ClusterRoleBinding:
			g.Expect(o.RoleRef.Name).To(HavePrefix("flotilla-"), "binding %s", o.Name)
		case *rbacv1.RoleBinding:
			g.Expect(o.RoleRef.Name).To(HavePrefix("flotilla-"), "binding %s/%s", o.Namespace, o.Name)
		case *rbacv1.ClusterRole:
			for _, rule := range o.Rules {
				g.Expect(rule.Verbs).NotTo(ContainElement("*"), "%s: rule %v", o.Name, rule)
				g.Expect(rule.Verbs).NotTo(ContainElement(BeElementOf("escalate", "bind")), "%s: rule %v", o.Name, rule)
				if slices.Contains(rule.Verbs, "impersonate") {
					// Only the GitOps reconciler impersonates, and only the appliers.
					g.Expect(o.Name).To(Equal(config.RoleName("gitops")))
					g.Expect(rule.ResourceNames).To(Equal([]string{flotillav1.GitOpsApplierServiceAccount}))
					g.Expect(rule.Resources).To(Equal([]string{"serviceaccounts"}))
				}
				if slices.Contains(rule.APIGroups, "") && slices.Contains(rule.Resources, "secrets") &&
					slices.ContainsFunc(rule.Verbs, func(v string) bool { return v != "get" && v != "list" && v != "watch" }) {
					withSecretWrites = append(withSecretWrites, o.Name)
				}
			}
		}
	}
	want := make([]string, 0, len(identitiesWithClusterWideSecretWrites))
	for _, id := range identitiesWithClusterWideSecretWrites {
		want = append(want, config.RoleName(id))
	}
	g.Expect(withSecretWrites).To(ConsistOf(want))
}

// TestEachIdentityOfTheManagerIsRefusedWhatItsRolesDoNotAllow installs the manager's roles on a
// real API server and acts as each identity with a client certificate for its ServiceAccount's
// user and groups, signed by the API server's CA, as the manager of a local management cluster
// does: the API server refuses what the identity's generated roles do not allow.
func TestEachIdentityOfTheManagerIsRefusedWhatItsRolesDoNotAllow(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	identities, err := env.ManagerIdentities(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	as := func(identity string) ctrlclient.Client {
		cfg, err := identities(identity)
		g.Expect(err).NotTo(HaveOccurred())
		c, err := ctrlclient.New(cfg, ctrlclient.Options{Scheme: env.Scheme})
		g.Expect(err).NotTo(HaveOccurred())
		return c
	}

	// An admin's Metal API key, and the registry credentials of the packages component.
	packetKey := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: infrav1.PacketCredentialsNamespace, Name: infrav1.DefaultPacketCredentialsSecret},
		Data:       map[string][]byte{infrav1.PacketAPIKeySecretKey: []byte("metal-api-key")},
	}
	registry := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: packagesv1.PackagesNamespace, Name: "registry"}}
	for _, s := range []*corev1.Secret{packetKey, registry} {
		g.Expect(env.Client.Create(ctx, s)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), s) })
	}
	forbidden := func(err error) {
		t.Helper()
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
	}

	t.Run("the packages component cannot read the Packet credentials, only its registry's", func(t *testing.T) {
		packages := as("packages")
		forbidden(packages.Get(ctx, ctrlclient.ObjectKeyFromObject(packetKey), &corev1.Secret{}))
		forbidden(packages.List(ctx, &corev1.SecretList{}, ctrlclient.InNamespace(infrav1.PacketCredentialsNamespace)))
		forbidden(packages.List(ctx, &corev1.SecretList{}))
		forbidden(packages.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: packagesv1.PackagesNamespace, Name: "planted"}}))
		g.Expect(packages.Get(ctx, ctrlclient.ObjectKeyFromObject(registry), &corev1.Secret{})).To(Succeed())
	})

	t.Run("the components that get Secrets by name cannot list them", func(t *testing.T) {
		// gitops gets the Git credentials an admin's GitOpsConfig names in flotilla-system;
		// kubeconfigaccess and addons get Secrets by name in every namespace (a workload
		// cluster's kubeconfig, a HelmChartProxy's values). None can list what it is not told
		// (docs/security.md, "Least privilege").
		for _, id := range []string{"gitops", "kubeconfigaccess", "addons"} {
			forbidden(as(id).List(ctx, &corev1.SecretList{}, ctrlclient.InNamespace(infrav1.PacketCredentialsNamespace)))
			forbidden(as(id).List(ctx, &corev1.SecretList{}))
		}
	})

	t.Run("the gitops component writes nothing itself and impersonates only the appliers", func(t *testing.T) {
		gitops := as("gitops")
		forbidden(gitops.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "planted"}}))
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "create", Group: flotillav1.GroupVersion.Group, Resource: "clusters", Namespace: "team-a"},
		}}
		g.Expect(gitops.Create(ctx, review)).To(Succeed())
		g.Expect(review.Status.Allowed).To(BeFalse(), "gitops may create Clusters itself")
		for _, c := range []struct {
			user    string
			allowed bool
		}{
			{serviceaccount.MakeUsername("team-a", flotillav1.GitOpsApplierServiceAccount), true},
			{serviceaccount.MakeUsername("team-a", "default"), false},
			{config.IdentityUser("capi"), false},
			{"system:admin", false},
		} {
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
				ResourceAttributes: impersonation(c.user),
			}}
			g.Expect(gitops.Create(ctx, review)).To(Succeed())
			g.Expect(review.Status.Allowed).To(Equal(c.allowed), "may gitops impersonate %s?", c.user)
		}
	})

	t.Run("no identity may do everything, impersonate an admin or bind roles", func(t *testing.T) {
		ids, err := config.ManagerIdentities()
		g.Expect(err).NotTo(HaveOccurred())
		checks := []*authorizationv1.ResourceAttributes{
			{Verb: "*", Group: "*", Resource: "*"},
			{Verb: "impersonate", Resource: "groups", Name: "system:masters"},
			{Verb: "impersonate", Resource: "users", Name: "system:admin"},
			{Verb: "bind", Group: rbacv1.GroupName, Resource: "clusterroles", Name: "cluster-admin"},
			{Verb: "create", Group: rbacv1.GroupName, Resource: "clusterrolebindings"},
		}
		for _, id := range ids {
			c := as(id)
			for _, attrs := range checks {
				review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs}}
				g.Expect(c.Create(ctx, review)).To(Succeed())
				g.Expect(review.Status.Allowed).To(BeFalse(), "identity %s may %v", id, *attrs)
			}
		}
	})
}

// impersonation is what impersonating user asks of the authorizer.
func impersonation(user string) *authorizationv1.ResourceAttributes {
	if ns, name, err := serviceaccount.SplitUsername(user); err == nil {
		return &authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "serviceaccounts", Namespace: ns, Name: name}
	}
	return &authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: user}
}
