package webhooks

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	clustervalidation "github.com/flotilla-dev/flotilla/cluster/validation"
)

// Paths the manager's webhook server serves the Cluster webhooks on (controller-runtime derives
// them from the group, version and kind).
const (
	DefaultingPath = "/mutate-cluster-flotilla-dev-v1alpha1-cluster"
	ValidatingPath = "/validate-cluster-flotilla-dev-v1alpha1-cluster"
)

// +kubebuilder:webhook:path=/mutate-cluster-flotilla-dev-v1alpha1-cluster,mutating=true,failurePolicy=fail,sideEffects=None,groups=cluster.flotilla.dev,resources=clusters,verbs=create;update,versions=v1alpha1,name=default.cluster.flotilla.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-cluster-flotilla-dev-v1alpha1-cluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=cluster.flotilla.dev,resources=clusters,verbs=create;update,versions=v1alpha1,name=validate.cluster.flotilla.dev,admissionReviewVersions=v1

// Cluster defaults and validates Flotilla Clusters on create and update.
type Cluster struct {
	// Reader lists Clusters to find the management cluster a new workload cluster defaults
	// spec.managementCluster to. Optional: without it that default is left to the client.
	Reader ctrlclient.Reader
}

var (
	_ admission.Defaulter[*flotillav1.Cluster] = &Cluster{}
	_ admission.Validator[*flotillav1.Cluster] = &Cluster{}
)

// SetupWebhookWithManager registers the defaulting and the validating webhook with mgr's
// webhook server, at DefaultingPath and ValidatingPath. Reader defaults to mgr's API reader.
func (w *Cluster) SetupWebhookWithManager(mgr ctrl.Manager) error {
	if w.Reader == nil {
		w.Reader = mgr.GetAPIReader()
	}
	err := ctrl.NewWebhookManagedBy(mgr, &flotillav1.Cluster{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
	if err != nil {
		return fmt.Errorf("setting up the Cluster webhooks: %w", err)
	}
	return nil
}

// Default fills in what a Cluster may leave out: validation.DefaultCluster's defaults, and a
// workload cluster's spec.managementCluster.name, the name of the one management Cluster this
// API server holds, when there is exactly one.
func (w *Cluster) Default(ctx context.Context, c *flotillav1.Cluster) error {
	clustervalidation.DefaultCluster(c)
	if c.Spec.ManagementCluster.Name == "" {
		name, err := w.managementClusterName(ctx)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		c.Spec.ManagementCluster.Name = name
	}
	return nil
}

// managementClusterName returns the name of the only management Cluster in the API server, or
// "" when there is none or more than one (or no Reader).
func (w *Cluster) managementClusterName(ctx context.Context) (string, error) {
	if w.Reader == nil {
		return "", nil
	}
	clusters := &flotillav1.ClusterList{}
	if err := w.Reader.List(ctx, clusters); err != nil {
		return "", fmt.Errorf("listing Clusters to find the management cluster: %w", err)
	}
	var names []string
	for _, c := range clusters.Items {
		if c.Spec.Management {
			names = append(names, c.Name)
		}
	}
	if len(names) != 1 {
		return "", nil
	}
	return names[0], nil
}

// ValidateCreate checks a new Cluster with validation.ValidateCluster.
func (w *Cluster) ValidateCreate(_ context.Context, c *flotillav1.Cluster) (admission.Warnings, error) {
	return nil, invalid(flotillav1.GroupVersion.WithKind("Cluster").GroupKind(), c.Name, clustervalidation.ValidateCluster(c))
}

// ValidateUpdate checks a change with validation.ValidateClusterUpdate.
func (w *Cluster) ValidateUpdate(_ context.Context, oldC, newC *flotillav1.Cluster) (admission.Warnings, error) {
	return nil, invalid(flotillav1.GroupVersion.WithKind("Cluster").GroupKind(), newC.Name, clustervalidation.ValidateClusterUpdate(oldC, newC))
}

// ValidateDelete allows every deletion.
func (w *Cluster) ValidateDelete(context.Context, *flotillav1.Cluster) (admission.Warnings, error) {
	return nil, nil
}

// invalid turns field errors into the API's Invalid status, naming each field.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, name, errs)
}
