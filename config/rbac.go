package config

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// clusterCreatorFS holds rbac/cluster-creator: hand-written, commented RBAC manifests.
//
//go:embed rbac/cluster-creator/*.yaml
var clusterCreatorFS embed.FS

// managerRBACFS holds the roles of the manager's identities, rbac/<identity>/role.yaml, generated
// by hack/rbacgen from the RBAC markers of the packages each identity runs.
//
//go:embed rbac/*/role.yaml
var managerRBACFS embed.FS

// ClusterCreatorRoleName is the ClusterRole that lets a user create, upgrade and delete Flotilla
// clusters in the namespace of the RoleBinding that binds it (rbac/cluster-creator).
const ClusterCreatorRoleName = "flotilla-cluster-creator"

// ClusterCreatorRBAC decodes the manifests of rbac/cluster-creator: the ClusterRole
// flotilla-cluster-creator, and the Role and RoleBinding that let every authenticated user read
// the published Flotilla version in kube-public. Each is a ClusterRole, Role or RoleBinding,
// strictly decoded, in file order.
func ClusterCreatorRBAC() ([]ctrlclient.Object, error) {
	return DecodeRBAC(clusterCreatorFS, "rbac/cluster-creator")
}

// InstallClusterCreatorRBAC applies the objects of ClusterCreatorRBAC with server-side apply
// (field manager FieldOwner, forcing ownership), creating the namespaces they live in when
// missing. It is idempotent.
func InstallClusterCreatorRBAC(ctx context.Context, c ctrlclient.Client) error {
	objs, err := ClusterCreatorRBAC()
	if err != nil {
		return err
	}
	return applyAll(ctx, c, objs)
}

// ClusterCreatorBinding is the RoleBinding, in namespace, of ClusterCreatorRoleName to subject:
// subject creates clusters in namespace, as docs/cluster-creator-role.md says. It is named after
// the subject.
func ClusterCreatorBinding(namespace string, subject rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: subject.Name + "-cluster-creator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ClusterCreatorRoleName},
		Subjects:   []rbacv1.Subject{subject},
	}
}

// InstallGitOpsApplier lets the writers of the repositories of the GitOpsConfigs in namespace
// create clusters there, and nothing more: it applies the ServiceAccount
// flotillav1.GitOpsApplierServiceAccount of namespace, which the GitOps reconciler impersonates
// to apply their specs, and its ClusterCreatorBinding (installing the cluster creator role
// first). It is idempotent; `flotilla create cluster` runs it, with the admin's kubeconfig, when
// it creates a GitOpsConfig.
func InstallGitOpsApplier(ctx context.Context, c ctrlclient.Client, namespace string) error {
	if err := InstallClusterCreatorRBAC(ctx, c); err != nil {
		return err
	}
	name := flotillav1.GitOpsApplierServiceAccount
	return applyAll(ctx, c, []ctrlclient.Object{
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		},
		ClusterCreatorBinding(namespace, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}),
	})
}

// Identities of the manager.
//
// The manager runs as several identities, each a ServiceAccount of flotilla-system named after
// what it runs: "manager" for what every manager runs besides its components (the cluster
// cache, webhook registration...), and each component's name. In a cluster the ServiceAccount
// authenticates with its tokens; on a local management cluster the manager authenticates as it
// with a client certificate, signed by the cluster's CA, that names the same user and groups
// (IdentityUser, IdentityGroups). Either way, the roles generated for the identity authorise its
// requests, and nothing else does: no identity is bound to cluster-admin or is in system:masters.
const (
	// IdentityNamespace holds the ServiceAccounts of the identities.
	IdentityNamespace = flotillav1.SystemNamespace
	// LeaderElectionRole is the Role in IdentityNamespace, generated with the manager's roles,
	// that binds every identity: each elects its leader with a Lease of its own.
	LeaderElectionRole = "flotilla-leader-election"
)

// IdentityUser is the user name of an identity of the manager: that of the ServiceAccount
// flotilla-system/<identity>.
func IdentityUser(identity string) string {
	return serviceaccount.MakeUsername(IdentityNamespace, identity)
}

// IdentityGroups are the groups of every identity of the manager: those Kubernetes puts every
// ServiceAccount of flotilla-system in.
func IdentityGroups() []string {
	return serviceaccount.MakeGroupNames(IdentityNamespace)
}

// RoleName is the name of the ClusterRole and Roles generated for an identity.
func RoleName(identity string) string { return "flotilla-" + identity }

// ManagerIdentities lists the identities whose roles are embedded, sorted.
func ManagerIdentities() ([]string, error) {
	entries, err := fs.ReadDir(managerRBACFS, "rbac")
	if err != nil {
		return nil, fmt.Errorf("reading embedded rbac: %w", err)
	}
	var ids []string
	for _, e := range entries {
		if _, err := fs.Stat(managerRBACFS, path.Join("rbac", e.Name(), "role.yaml")); e.IsDir() && err == nil {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// ManagerRBAC returns everything that lets each identity of the manager do its work: its
// ServiceAccount, the ClusterRole and Roles generated for it (rbac/<identity>/role.yaml), a
// ClusterRoleBinding and RoleBindings of those to the ServiceAccount, and one RoleBinding of
// LeaderElectionRole to every identity. A generated role that is neither the identity's
// (RoleName) nor LeaderElectionRole is an error.
func ManagerRBAC() ([]ctrlclient.Object, error) {
	ids, err := ManagerIdentities()
	if err != nil {
		return nil, err
	}
	var objs, bindings []ctrlclient.Object
	var leaderElection *rbacv1.Role
	subjects := make([]rbacv1.Subject, 0, len(ids))
	for _, id := range ids {
		subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: IdentityNamespace, Name: id}
		subjects = append(subjects, subject)
		objs = append(objs, &corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: metav1.ObjectMeta{Namespace: IdentityNamespace, Name: id},
		})
		roles, err := DecodeRBAC(managerRBACFS, path.Join("rbac", id))
		if err != nil {
			return nil, err
		}
		for _, obj := range roles {
			switch role := obj.(type) {
			case *rbacv1.ClusterRole:
				if role.Name != RoleName(id) {
					return nil, fmt.Errorf("rbac/%s: ClusterRole %s is not named after identity %s (%s)", id, role.Name, id, RoleName(id))
				}
				bindings = append(bindings, &rbacv1.ClusterRoleBinding{
					TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRoleBinding"},
					ObjectMeta: metav1.ObjectMeta{Name: role.Name},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
					Subjects:   []rbacv1.Subject{subject},
				})
			case *rbacv1.Role:
				switch {
				case role.Name == LeaderElectionRole && role.Namespace == IdentityNamespace:
					leaderElection = role
					continue // bound to every identity below
				case role.Name != RoleName(id):
					return nil, fmt.Errorf("rbac/%s: Role %s/%s is not named after identity %s (%s)", id, role.Namespace, role.Name, id, RoleName(id))
				}
				bindings = append(bindings, roleBinding(role, []rbacv1.Subject{subject}))
			default:
				return nil, fmt.Errorf("rbac/%s: a generated role file holds a %T", id, obj)
			}
			objs = append(objs, obj)
		}
	}
	if leaderElection == nil {
		return nil, fmt.Errorf("no Role %s/%s among the generated roles", IdentityNamespace, LeaderElectionRole)
	}
	objs = append(objs, leaderElection)
	bindings = append(bindings, roleBinding(leaderElection, subjects))
	return append(objs, bindings...), nil
}

// roleBinding binds role to subjects, in role's namespace and with role's name.
func roleBinding(role *rbacv1.Role, subjects []rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Namespace: role.Namespace, Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   subjects,
	}
}

// InstallManagerRBAC applies the objects of ManagerRBAC with server-side apply (field manager
// FieldOwner, forcing ownership), creating the namespaces they live in when missing. It is
// idempotent; an upgrade applies the roles of the new version.
func InstallManagerRBAC(ctx context.Context, c ctrlclient.Client) error {
	objs, err := ManagerRBAC()
	if err != nil {
		return err
	}
	return applyAll(ctx, c, objs)
}

// DecodeRBAC strictly decodes the RBAC manifests of dir in fsys, in file order: ClusterRoles,
// Roles and RoleBindings. The embedded manifests go through it, and hack/rbacgen reads the
// generated ones with it from disk.
func DecodeRBAC(fsys fs.FS, dir string) ([]ctrlclient.Object, error) {
	docs, err := readYAMLDocuments(fsys, dir)
	if err != nil {
		return nil, err
	}
	objs := make([]ctrlclient.Object, 0, len(docs))
	for _, doc := range docs {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc.body, &meta); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", doc.file, err)
		}
		var obj ctrlclient.Object
		switch meta.Kind {
		case "ClusterRole":
			obj = &rbacv1.ClusterRole{}
		case "Role":
			obj = &rbacv1.Role{}
		case "RoleBinding":
			obj = &rbacv1.RoleBinding{}
		default:
			return nil, fmt.Errorf("decoding %s: unexpected kind %q in an RBAC manifest", doc.file, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc.body, obj); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", doc.file, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// applyAll server-side applies objs in order, creating the namespaces they live in first when
// missing.
func applyAll(ctx context.Context, c ctrlclient.Client, objs []ctrlclient.Object) error {
	created := map[string]bool{}
	for _, obj := range objs {
		if ns := obj.GetNamespace(); ns != "" && !created[ns] {
			err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating namespace %s: %w", ns, err)
			}
			created[ns] = true
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("converting %T %s: %w", obj, obj.GetName(), err)
		}
		u := &unstructured.Unstructured{Object: content}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		if err := c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner(FieldOwner), ctrlclient.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), strings.TrimPrefix(ctrlclient.ObjectKeyFromObject(obj).String(), "/"), err)
		}
	}
	return nil
}
