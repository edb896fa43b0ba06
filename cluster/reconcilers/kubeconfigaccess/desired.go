package kubeconfigaccess

import (
	"cmp"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/secret"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/config"
)

// RoleName names the Role and the RoleBinding the reconciler keeps in each namespace.
const RoleName = "flotilla-kubeconfigs"

// ManagedByLabel marks the Role and RoleBinding as written by this reconciler.
const ManagedByLabel = "app.kubernetes.io/managed-by"

// managedByValue is ManagedByLabel's value.
const managedByValue = "flotilla-kubeconfigaccess"

// kubeconfigSecretNames returns the names of the kubeconfig Secrets of the workload clusters
// among clusters, sorted and without duplicates. Management clusters are left out.
func kubeconfigSecretNames(clusters []flotillav1.Cluster) []string {
	names := make([]string, 0, len(clusters))
	for _, c := range clusters {
		if c.Spec.Management {
			continue
		}
		names = append(names, secret.Name(c.Name, secret.Kubeconfig))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// clusterCreators returns the subjects that bindings bind to the ClusterRole
// flotilla-cluster-creator, sorted and without duplicates.
func clusterCreators(bindings []rbacv1.RoleBinding) []rbacv1.Subject {
	var subjects []rbacv1.Subject
	for _, b := range bindings {
		if !bindsClusterCreator(&b) {
			continue
		}
		subjects = append(subjects, b.Subjects...)
	}
	slices.SortFunc(subjects, func(a, b rbacv1.Subject) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.Name, b.Name), cmp.Compare(a.APIGroup, b.APIGroup))
	})
	return slices.Compact(subjects)
}

// bindsClusterCreator tells whether b binds the ClusterRole flotilla-cluster-creator.
func bindsClusterCreator(b *rbacv1.RoleBinding) bool {
	return b.RoleRef.APIGroup == rbacv1.GroupName && b.RoleRef.Kind == "ClusterRole" &&
		b.RoleRef.Name == config.ClusterCreatorRoleName
}

// desiredRole returns the Role that allows get on the Secrets named secretNames in namespace,
// or nil when secretNames is empty: a rule without resourceNames would allow every Secret.
func desiredRole(namespace string, secretNames []string) *rbacv1.Role {
	if len(secretNames) == 0 {
		return nil
	}
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: objectMeta(namespace),
		Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{""},
			Resources:     []string{"secrets"},
			ResourceNames: slices.Clone(secretNames),
			Verbs:         []string{"get"},
		}},
	}
}

// desiredRoleBinding returns the RoleBinding of the Role RoleName to subjects in namespace, or
// nil when there is no subject.
func desiredRoleBinding(namespace string, subjects []rbacv1.Subject) *rbacv1.RoleBinding {
	if len(subjects) == 0 {
		return nil
	}
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: objectMeta(namespace),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: RoleName},
		Subjects:   slices.Clone(subjects),
	}
}

func objectMeta(namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:      RoleName,
		Namespace: namespace,
		Labels:    map[string]string{ManagedByLabel: managedByValue},
	}
}
