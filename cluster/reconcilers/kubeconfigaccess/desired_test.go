package kubeconfigaccess

import (
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

func cluster(name string, management bool) flotillav1.Cluster {
	return flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: flotillav1.ClusterSpec{Management: management}}
}

func binding(kind, role string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
	return rbacv1.RoleBinding{
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role},
		Subjects: subjects,
	}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

func TestKubeconfigSecretNames(t *testing.T) {
	tests := []struct {
		name     string
		clusters []flotillav1.Cluster
		want     []string
	}{
		{name: "no cluster grants nothing", want: []string{}},
		{name: "each workload cluster grants its kubeconfig Secret, sorted",
			clusters: []flotillav1.Cluster{cluster("w2", false), cluster("w1", false)},
			want:     []string{"w1-kubeconfig", "w2-kubeconfig"}},
		{name: "a management cluster's kubeconfig is never granted",
			clusters: []flotillav1.Cluster{cluster("mgmt", true), cluster("w1", false)},
			want:     []string{"w1-kubeconfig"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(kubeconfigSecretNames(tt.clusters)).To(Equal(tt.want))
		})
	}
}

func TestClusterCreators(t *testing.T) {
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "ci", Name: "deployer"}
	group := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "team-a"}
	tests := []struct {
		name     string
		bindings []rbacv1.RoleBinding
		want     []rbacv1.Subject
	}{
		{name: "no binding, no subject"},
		{name: "subjects of every binding of the ClusterRole are merged, sorted and deduplicated",
			bindings: []rbacv1.RoleBinding{
				binding("ClusterRole", "flotilla-cluster-creator", user("bob"), sa),
				binding("ClusterRole", "flotilla-cluster-creator", user("alice"), group, user("bob")),
			},
			want: []rbacv1.Subject{group, sa, user("alice"), user("bob")}},
		{name: "bindings of other roles, or of a Role that has the ClusterRole's name, are ignored",
			bindings: []rbacv1.RoleBinding{
				binding("ClusterRole", "view", user("carol")),
				binding("Role", "flotilla-cluster-creator", user("dave")),
				binding("Role", RoleName, user("erin")),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(clusterCreators(tt.bindings)).To(Equal(tt.want))
		})
	}
}

func TestDesiredRole(t *testing.T) {
	t.Run("no Secret name means no Role, since a rule without resourceNames allows every Secret", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(desiredRole("team-a", nil)).To(BeNil())
		g.Expect(desiredRole("team-a", []string{})).To(BeNil())
	})
	t.Run("the Role allows only get, only on the named Secrets", func(t *testing.T) {
		g := NewWithT(t)
		role := desiredRole("team-a", []string{"w1-kubeconfig"})
		g.Expect(role.Namespace).To(Equal("team-a"))
		g.Expect(role.Name).To(Equal(RoleName))
		g.Expect(role.Labels).To(HaveKeyWithValue(ManagedByLabel, managedByValue))
		g.Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"w1-kubeconfig"}, Verbs: []string{"get"},
		}}))
	})
}

func TestDesiredRoleBinding(t *testing.T) {
	t.Run("no subject means no RoleBinding", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(desiredRoleBinding("team-a", nil)).To(BeNil())
	})
	t.Run("the RoleBinding binds the Role to the subjects", func(t *testing.T) {
		g := NewWithT(t)
		b := desiredRoleBinding("team-a", []rbacv1.Subject{user("alice")})
		g.Expect(b.Namespace).To(Equal("team-a"))
		g.Expect(b.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoleName}))
		g.Expect(b.Subjects).To(Equal([]rbacv1.Subject{user("alice")}))
	})
}
