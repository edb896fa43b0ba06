package kubeconfigaccess

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// FieldOwner is the server-side apply field manager of the Role and RoleBinding.
const FieldOwner = "flotilla-kubeconfigaccess"

// The manager may grant only what it holds: get on Secrets, here.
// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get

// Reconciler keeps, in each namespace, the Role and RoleBinding flotilla-kubeconfigs that let
// the subjects bound to flotilla-cluster-creator there get the kubeconfig Secrets of the
// namespace's workload clusters (see the package documentation). Its requests name namespaces.
type Reconciler struct {
	// Client reads Clusters, Roles and RoleBindings through the manager's cache and writes to
	// the API server.
	Client ctrlclient.Client
}

// SetupWithManager registers the reconciler with mgr. It watches Flotilla Clusters (created,
// deleted, or their spec changed), RoleBindings of flotilla-cluster-creator, and its own Role
// and RoleBinding, each mapped to its namespace.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		return errors.New("kubeconfigaccess reconciler: Client is required")
	}
	toNamespace := handler.EnqueueRequestsFromMapFunc(namespaceRequest)
	ours := predicate.NewPredicateFuncs(func(obj ctrlclient.Object) bool { return obj.GetName() == RoleName })
	relevantBinding := predicate.NewPredicateFuncs(func(obj ctrlclient.Object) bool {
		b, ok := obj.(*rbacv1.RoleBinding)
		return ok && (b.Name == RoleName || bindsClusterCreator(b))
	})
	err := ctrl.NewControllerManagedBy(mgr).
		Named("kubeconfigaccess").
		Watches(&flotillav1.Cluster{}, toNamespace, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&rbacv1.RoleBinding{}, toNamespace, builder.WithPredicates(relevantBinding)).
		Watches(&rbacv1.Role{}, toNamespace, builder.WithPredicates(ours)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the kubeconfigaccess controller: %w", err)
	}
	return nil
}

// namespaceRequest maps any namespaced object to a request for its namespace.
func namespaceRequest(_ context.Context, obj ctrlclient.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
}

// Reconcile brings the Role and RoleBinding flotilla-kubeconfigs of namespace req.Name in line
// with the namespace's workload Clusters and flotilla-cluster-creator bindings: written when
// both exist, deleted otherwise.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	namespace := req.Name
	log := ctrl.LoggerFrom(ctx).WithValues("namespace", namespace)
	ctx = ctrl.LoggerInto(ctx, log)

	clusters := &flotillav1.ClusterList{}
	if err := r.Client.List(ctx, clusters, ctrlclient.InNamespace(namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing Clusters in namespace %s: %w", namespace, err)
	}
	bindings := &rbacv1.RoleBindingList{}
	if err := r.Client.List(ctx, bindings, ctrlclient.InNamespace(namespace)); err != nil {
		return ctrl.Result{}, fmt.Errorf("listing RoleBindings in namespace %s: %w", namespace, err)
	}
	role := desiredRole(namespace, kubeconfigSecretNames(clusters.Items))
	binding := desiredRoleBinding(namespace, clusterCreators(bindings.Items))

	var err error
	if role == nil || binding == nil {
		err = r.revoke(ctx, namespace)
	} else {
		err = r.grant(ctx, role, binding)
	}
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		log.V(1).Info("Namespace is being deleted, and its Roles with it")
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// grant writes role, then binding, unless they are already as desired.
func (r *Reconciler) grant(ctx context.Context, role *rbacv1.Role, binding *rbacv1.RoleBinding) error {
	log := ctrl.LoggerFrom(ctx)
	existingRole := &rbacv1.Role{}
	err := r.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(role), existingRole)
	if ctrlclient.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading Role %s: %w", klog.KObj(role), err)
	}
	if err != nil || !sameRole(existingRole, role) {
		log.Info("Granting get on kubeconfig Secrets", "role", klog.KObj(role), "secrets", role.Rules[0].ResourceNames)
		if err := r.apply(ctx, role); err != nil {
			return err
		}
	}

	existingBinding := &rbacv1.RoleBinding{}
	err = r.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(binding), existingBinding)
	if ctrlclient.IgnoreNotFound(err) != nil {
		return fmt.Errorf("reading RoleBinding %s: %w", klog.KObj(binding), err)
	}
	if err == nil && sameBinding(existingBinding, binding) {
		return nil
	}
	if err == nil && existingBinding.RoleRef != binding.RoleRef {
		// roleRef is immutable: replace a binding that someone pointed elsewhere.
		if err := r.Client.Delete(ctx, existingBinding); ctrlclient.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting RoleBinding %s: %w", klog.KObj(existingBinding), err)
		}
	}
	log.Info("Binding kubeconfig access to the namespace's cluster creators", "roleBinding", klog.KObj(binding), "subjects", len(binding.Subjects))
	return r.apply(ctx, binding)
}

// revoke deletes the RoleBinding, then the Role, of namespace.
func (r *Reconciler) revoke(ctx context.Context, namespace string) error {
	for _, obj := range []ctrlclient.Object{&rbacv1.RoleBinding{}, &rbacv1.Role{}} {
		err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: RoleName}, obj)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %T %s/%s: %w", obj, namespace, RoleName, err)
		}
		ctrl.LoggerFrom(ctx).Info("Revoking kubeconfig access: no workload cluster or no cluster creator left", "object", klog.KObj(obj))
		if err := r.Client.Delete(ctx, obj); ctrlclient.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting %T %s: %w", obj, klog.KObj(obj), err)
		}
	}
	return nil
}

// apply writes obj (a typed object with apiVersion and kind set) with server-side apply.
func (r *Reconciler) apply(ctx context.Context, obj ctrlclient.Object) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("converting %s: %w", klog.KObj(obj), err)
	}
	u := &unstructured.Unstructured{Object: content}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := r.Client.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner(FieldOwner), ctrlclient.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", u.GetKind(), klog.KObj(obj), err)
	}
	return nil
}

func sameRole(existing, desired *rbacv1.Role) bool {
	return existing.Labels[ManagedByLabel] == desired.Labels[ManagedByLabel] &&
		equality.Semantic.DeepEqual(existing.Rules, desired.Rules)
}

func sameBinding(existing, desired *rbacv1.RoleBinding) bool {
	return existing.Labels[ManagedByLabel] == desired.Labels[ManagedByLabel] &&
		existing.RoleRef == desired.RoleRef &&
		equality.Semantic.DeepEqual(existing.Subjects, desired.Subjects)
}
