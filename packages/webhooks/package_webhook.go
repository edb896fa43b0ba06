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

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/catalog"
)

// ValidatingPath is where the manager's webhook server serves the Package webhook.
const ValidatingPath = "/validate-packages-flotilla-dev-v1alpha1-package"

// +kubebuilder:webhook:path=/validate-packages-flotilla-dev-v1alpha1-package,mutating=false,failurePolicy=fail,sideEffects=None,groups=packages.flotilla.dev,resources=packages,verbs=create;update,versions=v1alpha1,name=validate.package.packages.flotilla.dev,admissionReviewVersions=v1

// Package validates Packages on create and update.
type Package struct {
	// Reader reads PackageBundleControllers and PackageBundles; the manager's API reader when nil.
	Reader ctrlclient.Reader
}

var _ admission.Validator[*packagesv1.Package] = &Package{}

// SetupWebhookWithManager registers the validating webhook with mgr's webhook server.
func (w *Package) SetupWebhookWithManager(mgr ctrl.Manager) error {
	if w.Reader == nil {
		w.Reader = mgr.GetAPIReader()
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &packagesv1.Package{}).WithValidator(w).Complete(); err != nil {
		return fmt.Errorf("setting up the Package webhook: %w", err)
	}
	return nil
}

// ValidateCreate validates a new Package.
func (w *Package) ValidateCreate(ctx context.Context, p *packagesv1.Package) (admission.Warnings, error) {
	return w.validate(ctx, p, nil)
}

// ValidateUpdate validates a changed Package. A Package being deleted is not checked again:
// its finalizer must be able to go.
func (w *Package) ValidateUpdate(ctx context.Context, old, p *packagesv1.Package) (admission.Warnings, error) {
	if !p.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	return w.validate(ctx, p, old)
}

// ValidateDelete accepts every deletion.
func (w *Package) ValidateDelete(context.Context, *packagesv1.Package) (admission.Warnings, error) {
	return nil, nil
}

func (w *Package) validate(ctx context.Context, p *packagesv1.Package, old *packagesv1.Package) (admission.Warnings, error) {
	var errs field.ErrorList
	cluster, ok := packagesv1.ClusterFromNamespace(p.Namespace)
	if !ok {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), p.Namespace,
			"a Package lives in the namespace "+packagesv1.ClusterNamespacePrefix+"<cluster> of its cluster"))
	}
	if old != nil && old.Spec.TargetNamespace != p.Spec.TargetNamespace {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "targetNamespace"),
			"is immutable: delete the Package and create it again to move the release"))
	}
	if len(errs) > 0 {
		return nil, invalid(p, errs)
	}

	pbc := &packagesv1.PackageBundleController{}
	if err := w.Reader.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: cluster}, pbc); err != nil {
		if apierrors.IsNotFound(err) {
			return admission.Warnings{fmt.Sprintf("cluster %s has no PackageBundleController yet: the Package is checked when it has an active bundle", cluster)}, nil
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("reading PackageBundleController %s: %w", cluster, err))
	}
	if pbc.Spec.ActiveBundle == "" {
		return admission.Warnings{fmt.Sprintf("PackageBundleController %s has no active bundle yet: the Package is checked when it has one", cluster)}, nil
	}
	bundle := &packagesv1.PackageBundle{}
	if err := w.Reader.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: pbc.Spec.ActiveBundle}, bundle); err != nil {
		if apierrors.IsNotFound(err) {
			return admission.Warnings{fmt.Sprintf("the active bundle %s of cluster %s does not exist", pbc.Spec.ActiveBundle, cluster)}, nil
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("reading PackageBundle %s: %w", pbc.Spec.ActiveBundle, err))
	}
	if _, errs := catalog.Resolve(bundle, p.Spec); len(errs) > 0 {
		return nil, invalid(p, errs)
	}
	return nil, nil
}

func invalid(p *packagesv1.Package, errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: packagesv1.GroupVersion.Group, Kind: "Package"}, p.Name, errs)
}
