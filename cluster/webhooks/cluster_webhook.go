package webhooks

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
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
// +kubebuilder:webhook:path=/validate-cluster-flotilla-dev-v1alpha1-cluster,mutating=false,failurePolicy=fail,sideEffects=None,groups=cluster.flotilla.dev,resources=clusters,verbs=create;update;delete,versions=v1alpha1,name=validate.cluster.flotilla.dev,admissionReviewVersions=v1

// The Cluster webhook reads the TenantQuotas of the Cluster's namespace.
// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=tenantquotas,verbs=list

// Cluster defaults and validates Flotilla Clusters on create and update.
type Cluster struct {
	// Reader lists the Clusters of the API server: to find the management cluster a new
	// workload cluster defaults spec.managementCluster to, and to check a new Cluster against
	// the others (clustervalidation.ValidateClusterPeers). Optional: without it neither is done.
	Reader ctrlclient.Reader
	// Admins are trusted with what only admins may do (clustervalidation.ValidateClusterRequest);
	// DefaultAdmins when zero.
	Admins Admins
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

// Default fills in what a Cluster may leave out: clustervalidation.DefaultCluster's defaults, and a
// workload cluster's spec.managementCluster.name, the name of the one management Cluster this
// API server holds, when there is exactly one.
func (w *Cluster) Default(ctx context.Context, c *flotillav1.Cluster) error {
	clustervalidation.DefaultCluster(c)
	if c.Spec.ManagementCluster.Name == "" {
		clusters, err := w.clusters(ctx)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		c.Spec.ManagementCluster.Name = managementClusterName(clusters)
	}
	return nil
}

// clusters lists the Clusters of the API server; none without a Reader.
func (w *Cluster) clusters(ctx context.Context) ([]flotillav1.Cluster, error) {
	if w.Reader == nil {
		return nil, nil
	}
	list := &flotillav1.ClusterList{}
	if err := w.Reader.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing Clusters: %w", err)
	}
	return list.Items, nil
}

// managementClusterName returns the name of the only management Cluster among clusters, or ""
// when there is none or more than one.
func managementClusterName(clusters []flotillav1.Cluster) string {
	var names []string
	for _, c := range clusters {
		if c.Spec.Management {
			names = append(names, c.Name)
		}
	}
	if len(names) != 1 {
		return ""
	}
	return names[0]
}

// ValidateCreate checks a new Cluster with clustervalidation.ValidateCluster, against the other
// Clusters of the API server (clustervalidation.ValidateClusterPeers), against who asks
// (clustervalidation.ValidateClusterRequest), and the topology of a Cluster of a ClusterClass
// against its class (validateTopologyClass).
func (w *Cluster) ValidateCreate(ctx context.Context, c *flotillav1.Cluster) (admission.Warnings, error) {
	errs := clustervalidation.ValidateCluster(c)
	errs = append(errs, w.validateTopologyClass(ctx, nil, c)...)
	clusters, err := w.clusters(ctx)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, clustervalidation.ValidateClusterPeers(c, clusters)...)
	who := w.request(ctx, clusters)
	errs = append(errs, clustervalidation.ValidateClusterRequest(nil, c, who)...)
	quotaErrs, err := w.validateQuota(ctx, nil, c, clusters, who)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	errs = append(errs, quotaErrs...)
	return nil, invalid(clusterKind, c.Name, errs)
}

// ValidateUpdate checks a change with clustervalidation.ValidateClusterUpdate, and whenever the
// spec changed, against who asks (clustervalidation.ValidateClusterRequest) and the topology of a
// Cluster of a ClusterClass against its class again.
func (w *Cluster) ValidateUpdate(ctx context.Context, oldC, newC *flotillav1.Cluster) (admission.Warnings, error) {
	errs := clustervalidation.ValidateClusterUpdate(oldC, newC)
	if !equality.Semantic.DeepEqual(oldC.Spec, newC.Spec) {
		errs = append(errs, w.validateTopologyClass(ctx, oldC, newC)...)
		clusters, err := w.clusters(ctx)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		who := w.request(ctx, clusters)
		errs = append(errs, clustervalidation.ValidateClusterRequest(oldC, newC, who)...)
		quotaErrs, err := w.validateQuota(ctx, oldC, newC, clusters, who)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		errs = append(errs, quotaErrs...)
	}
	return nil, invalid(clusterKind, newC.Name, errs)
}

// validateQuota holds a Cluster to the TenantQuotas of its namespace
// (clustervalidation.ValidateClusterQuota); nothing without a Reader.
func (w *Cluster) validateQuota(ctx context.Context, oldC, newC *flotillav1.Cluster, clusters []flotillav1.Cluster, who clustervalidation.Request) (field.ErrorList, error) {
	if w.Reader == nil || who.Admin {
		return nil, nil
	}
	quotas := &flotillav1.TenantQuotaList{}
	if err := w.Reader.List(ctx, quotas); err != nil {
		return nil, fmt.Errorf("listing TenantQuotas: %w", err)
	}
	limits := clustervalidation.LimitsOf(newC.Namespace, quotas.Items)
	return clustervalidation.ValidateClusterQuota(oldC, newC, clusters, limits, who), nil
}

// request is what ValidateClusterRequest needs to know about the request in ctx.
func (w *Cluster) request(ctx context.Context, clusters []flotillav1.Cluster) clustervalidation.Request {
	return clustervalidation.Request{Admin: w.Admins.fromAdmin(ctx), ManagementCluster: managementClusterName(clusters)}
}

// ValidateDelete lets only admins delete a management Cluster
// (clustervalidation.ValidateClusterDeleteRequest).
func (w *Cluster) ValidateDelete(ctx context.Context, c *flotillav1.Cluster) (admission.Warnings, error) {
	return nil, invalid(clusterKind, c.Name, clustervalidation.ValidateClusterDeleteRequest(c, clustervalidation.Request{Admin: w.Admins.fromAdmin(ctx)}))
}

// clusterKind names Clusters in Invalid errors.
var clusterKind = flotillav1.GroupVersion.WithKind("Cluster").GroupKind()

// invalid turns field errors into the API's Invalid status, naming each field.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, name, errs)
}
