package config_test

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/config"
)

func clusterCreatorRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	objs, err := config.ClusterCreatorRBAC()
	if err != nil {
		t.Fatalf("ClusterCreatorRBAC: %v", err)
	}
	for _, obj := range objs {
		if role, ok := obj.(*rbacv1.ClusterRole); ok && role.Name == config.ClusterCreatorRoleName {
			return role
		}
	}
	t.Fatalf("no ClusterRole %s in rbac/cluster-creator", config.ClusterCreatorRoleName)
	return nil
}

func TestClusterCreatorRoleCannotReadSecretsNorWriteClusterAPIObjects(t *testing.T) {
	g := NewWithT(t)
	writes := []string{"create", "update", "patch", "delete", "deletecollection", "*"}
	for _, rule := range clusterCreatorRole(t).Rules {
		g.Expect(rule.Resources).NotTo(ContainElement("*"))
		g.Expect(rule.Verbs).NotTo(ContainElement("*"))
		g.Expect(rule.Verbs).NotTo(ContainElement(BeElementOf("escalate", "bind", "impersonate")))
		if slices.Contains(rule.APIGroups, "") {
			// Secrets come only through the Role the kubeconfigaccess controller keeps.
			g.Expect(rule.Resources).To(Equal([]string{"events"}), "core resources of rule %v", rule)
		}
		for _, group := range rule.APIGroups {
			if group == "cluster.x-k8s.io" || group == "addons.cluster.x-k8s.io" || group == "controlplane.flotilla.dev" {
				g.Expect(rule.Verbs).NotTo(ContainElement(BeElementOf(writes)), "rule %v", rule)
			}
		}
		g.Expect(rule.Resources).NotTo(ContainElement(HaveSuffix("/status")))
	}
}

func TestClusterCreatorRBACInstallsAndCanRunAgain(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g.Expect(config.InstallClusterCreatorRBAC(ctx, env.Client)).To(Succeed())
	g.Expect(config.InstallClusterCreatorRBAC(ctx, env.Client)).To(Succeed())

	role := &rbacv1.ClusterRole{}
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Name: config.ClusterCreatorRoleName}, role)).To(Succeed())
	g.Expect(role.Rules).To(Equal(clusterCreatorRole(t).Rules))
	binding := &rbacv1.RoleBinding{}
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "kube-public", Name: "flotilla-version-reader"}, binding)).To(Succeed())
	g.Expect(binding.Subjects).To(ConsistOf(HaveField("Name", "system:authenticated")))
}
