package webhooks

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	clustervalidation "github.com/flotilla-dev/flotilla/cluster/validation"
	localspec "github.com/flotilla-dev/flotilla/infrastructure/local/clusterspec"
	packetspec "github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/credentials"
)

// +kubebuilder:webhook:path=/validate-infrastructure-flotilla-dev-v1alpha1-localdatacenterconfig,mutating=false,failurePolicy=fail,sideEffects=None,groups=infrastructure.flotilla.dev,resources=localdatacenterconfigs,verbs=create;update;delete,versions=v1alpha1,name=validate.localdatacenterconfig.infrastructure.flotilla.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-infrastructure-flotilla-dev-v1alpha1-localmachineconfig,mutating=false,failurePolicy=fail,sideEffects=None,groups=infrastructure.flotilla.dev,resources=localmachineconfigs,verbs=create;update;delete,versions=v1alpha1,name=validate.localmachineconfig.infrastructure.flotilla.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-infrastructure-flotilla-dev-v1alpha1-packetdatacenterconfig,mutating=false,failurePolicy=fail,sideEffects=None,groups=infrastructure.flotilla.dev,resources=packetdatacenterconfigs,verbs=create;update;delete,versions=v1alpha1,name=validate.packetdatacenterconfig.infrastructure.flotilla.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-infrastructure-flotilla-dev-v1alpha1-packetclusteridentity,mutating=false,failurePolicy=fail,sideEffects=None,groups=infrastructure.flotilla.dev,resources=packetclusteridentities,verbs=create;update,versions=v1alpha1,name=validate.packetclusteridentity.infrastructure.flotilla.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-infrastructure-flotilla-dev-v1alpha1-packetmachineconfig,mutating=false,failurePolicy=fail,sideEffects=None,groups=infrastructure.flotilla.dev,resources=packetmachineconfigs,verbs=create;update;delete,versions=v1alpha1,name=validate.packetmachineconfig.infrastructure.flotilla.dev,admissionReviewVersions=v1

// The PacketDatacenterConfig webhook reads the PacketClusterIdentity a config names, and the
// config's namespace (for the identity's label selector).
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetclusteridentities,verbs=get
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// Config validates one kind of provider config with its provider's rules
// (infrastructure/<provider>/clusterspec, which the provider registry lists): on
// create always, on update when the spec changed (a config created under older rules keeps
// taking label and annotation changes, as clusterctl move makes them).
type Config[T ctrlclient.Object] struct {
	kind     schema.GroupKind
	validate func(T) field.ErrorList
	spec     func(T) any
	// lookup, when set, checks what needs the API server's other objects.
	lookup func(context.Context, T) (admission.Warnings, field.ErrorList, error)
	// byWhom, when set, checks what only admins may ask for (old is nil on create).
	byWhom func(old, new T, who clustervalidation.Request) field.ErrorList
	admins Admins
	// reader lists the Clusters of a config's namespace, to leave the configs of a management
	// cluster to admins (clustervalidation.ValidateManagementConfigRequest).
	reader ctrlclient.Reader
}

var _ admission.Validator[*infrav1.PacketDatacenterConfig] = &Config[*infrav1.PacketDatacenterConfig]{}

// ValidateCreate checks a new config.
func (w *Config[T]) ValidateCreate(ctx context.Context, obj T) (admission.Warnings, error) {
	var none T
	return w.check(ctx, none, obj)
}

// ValidateUpdate checks a config whose spec changed, which a management cluster's config may
// only be by an admin.
func (w *Config[T]) ValidateUpdate(ctx context.Context, oldObj, newObj T) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(w.spec(oldObj), w.spec(newObj)) {
		return nil, nil
	}
	if err := w.checkManagementConfig(ctx, newObj); err != nil {
		return nil, err
	}
	return w.check(ctx, oldObj, newObj)
}

// check runs the config's rules (on create, oldObj is T's zero value), and its lookup when the
// rules pass.
func (w *Config[T]) check(ctx context.Context, oldObj, obj T) (admission.Warnings, error) {
	errs := w.validate(obj)
	if w.byWhom != nil {
		errs = append(errs, w.byWhom(oldObj, obj, clustervalidation.Request{Admin: w.admins.fromAdmin(ctx)})...)
	}
	if len(errs) > 0 || w.lookup == nil {
		return nil, invalid(w.kind, obj.GetName(), errs)
	}
	warnings, errs, err := w.lookup(ctx, obj)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return warnings, invalid(w.kind, obj.GetName(), errs)
}

// ValidateDelete leaves the deletion of a management cluster's config to admins.
func (w *Config[T]) ValidateDelete(ctx context.Context, obj T) (admission.Warnings, error) {
	return nil, w.checkManagementConfig(ctx, obj)
}

// checkManagementConfig refuses a change or deletion of a config that a management Cluster of its
// namespace names, unless an admin asks (clustervalidation.ValidateManagementConfigRequest).
func (w *Config[T]) checkManagementConfig(ctx context.Context, obj T) error {
	who := clustervalidation.Request{Admin: w.admins.fromAdmin(ctx)}
	if who.Admin || w.reader == nil || obj.GetNamespace() == "" {
		return nil
	}
	clusters := &flotillav1.ClusterList{}
	if err := w.reader.List(ctx, clusters, ctrlclient.InNamespace(obj.GetNamespace())); err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing Clusters: %w", err))
	}
	return invalid(w.kind, obj.GetName(), clustervalidation.ValidateManagementConfigRequest(w.kind.Kind, obj.GetName(), clusters.Items, who))
}

// identityAllowsNamespace is the lookup of a PacketDatacenterConfig: the PacketClusterIdentity
// it names allows the config's namespace (credentials.Allows, which the provider checks again
// before every use). An identity that does not exist yet is a warning: the cluster waits for an
// admin to create it.
func identityAllowsNamespace(reader ctrlclient.Reader) func(context.Context, *infrav1.PacketDatacenterConfig) (admission.Warnings, field.ErrorList, error) {
	return func(ctx context.Context, dc *infrav1.PacketDatacenterConfig) (admission.Warnings, field.ErrorList, error) {
		name := credentials.IdentityName(dc.Spec.IdentityRef)
		identity := &infrav1.PacketClusterIdentity{}
		if err := reader.Get(ctx, ctrlclient.ObjectKey{Name: name}, identity); err != nil {
			if apierrors.IsNotFound(err) {
				return admission.Warnings{fmt.Sprintf("PacketClusterIdentity %q does not exist yet: clusters of this config wait until an admin creates it, allowing namespace %q",
					name, dc.Namespace)}, nil, nil
			}
			return nil, nil, fmt.Errorf("reading PacketClusterIdentity %s: %w", name, err)
		}
		ns := &corev1.Namespace{}
		if err := reader.Get(ctx, ctrlclient.ObjectKey{Name: dc.Namespace}, ns); err != nil {
			return nil, nil, fmt.Errorf("reading namespace %s: %w", dc.Namespace, err)
		}
		if err := credentials.Allows(identity, ns); err != nil {
			path := field.NewPath("spec", "identityRef")
			if dc.Spec.IdentityRef != nil {
				path = path.Child("name")
			}
			return nil, field.ErrorList{field.Forbidden(path, err.Error())}, nil
		}
		return nil, nil, nil
	}
}

// SetupConfigWebhooksWithManager registers the validating webhooks of the configs of every
// provider of the registry (infrastructure/providers: LocalDatacenterConfig, LocalMachineConfig,
// PacketDatacenterConfig, PacketMachineConfig; a test holds the two lists together) and of
// PacketClusterIdentity with mgr's webhook server. The
// PacketDatacenterConfig webhook reads identities and namespaces with mgr's API reader; the
// LocalDatacenterConfig webhook leaves another image mirror than the embedded registry to admins.
func SetupConfigWebhooksWithManager(mgr ctrl.Manager, admins Admins) error {
	err := setupConfig(mgr, admins, &infrav1.LocalDatacenterConfig{}, &Config[*infrav1.LocalDatacenterConfig]{validate: localspec.ValidateDatacenterConfig,
		spec:   func(o *infrav1.LocalDatacenterConfig) any { return o.Spec },
		byWhom: clustervalidation.ValidateLocalDatacenterConfigRequest})
	if err != nil {
		return err
	}
	err = setupConfig(mgr, admins, &infrav1.LocalMachineConfig{}, &Config[*infrav1.LocalMachineConfig]{validate: localspec.ValidateMachineConfig,
		spec: func(o *infrav1.LocalMachineConfig) any { return o.Spec }})
	if err != nil {
		return err
	}
	err = setupConfig(mgr, admins, &infrav1.PacketDatacenterConfig{}, &Config[*infrav1.PacketDatacenterConfig]{validate: packetspec.ValidateDatacenterConfig,
		spec: func(o *infrav1.PacketDatacenterConfig) any { return o.Spec }, lookup: identityAllowsNamespace(mgr.GetAPIReader())})
	if err != nil {
		return err
	}
	err = setupConfig(mgr, admins, &infrav1.PacketClusterIdentity{}, &Config[*infrav1.PacketClusterIdentity]{validate: packetspec.ValidateClusterIdentity,
		spec: func(o *infrav1.PacketClusterIdentity) any { return o.Spec }})
	if err != nil {
		return err
	}
	return setupConfig(mgr, admins, &infrav1.PacketMachineConfig{}, &Config[*infrav1.PacketMachineConfig]{validate: packetspec.ValidateMachineConfig,
		spec: func(o *infrav1.PacketMachineConfig) any { return o.Spec }})
}

func setupConfig[T ctrlclient.Object](mgr ctrl.Manager, admins Admins, obj T, w *Config[T]) error {
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("setting up a config webhook: %w", err)
	}
	w.kind = gvk.GroupKind()
	w.reader, w.admins = mgr.GetAPIReader(), admins
	if err := ctrl.NewWebhookManagedBy(mgr, obj).WithValidator(w).Complete(); err != nil {
		return fmt.Errorf("setting up the %s webhook: %w", gvk.Kind, err)
	}
	return nil
}
