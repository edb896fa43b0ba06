package config

import (
	"context"
	"embed"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// clusterCreatorFS holds rbac/cluster-creator: hand-written, commented RBAC manifests (the
// generated manager role, rbac/role.yaml, is not embedded).
//
//go:embed rbac/cluster-creator/*.yaml
var clusterCreatorFS embed.FS

// ClusterCreatorRoleName is the ClusterRole that lets a user create, upgrade and delete Flotilla
// clusters in the namespace of the RoleBinding that binds it (rbac/cluster-creator).
const ClusterCreatorRoleName = "flotilla-cluster-creator"

// ClusterCreatorRBAC decodes the manifests of rbac/cluster-creator: the ClusterRole
// flotilla-cluster-creator, and the Role and RoleBinding that let every authenticated user read
// the published Flotilla version in kube-public. Each is a ClusterRole, Role or RoleBinding,
// strictly decoded, in file order.
func ClusterCreatorRBAC() ([]ctrlclient.Object, error) {
	docs, err := readYAMLDocuments(clusterCreatorFS, "rbac/cluster-creator")
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

// InstallClusterCreatorRBAC applies the objects of ClusterCreatorRBAC with server-side apply
// (field manager FieldOwner, forcing ownership), creating the namespaces they live in when
// missing. It is idempotent.
func InstallClusterCreatorRBAC(ctx context.Context, c ctrlclient.Client) error {
	objs, err := ClusterCreatorRBAC()
	if err != nil {
		return err
	}
	for _, obj := range objs {
		if ns := obj.GetNamespace(); ns != "" {
			err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating namespace %s: %w", ns, err)
			}
		}
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("converting %T %s: %w", obj, obj.GetName(), err)
		}
		u := &unstructured.Unstructured{Object: content}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		if err := c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner(FieldOwner), ctrlclient.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", u.GetKind(), ctrlclient.ObjectKeyFromObject(obj), err)
		}
	}
	return nil
}
