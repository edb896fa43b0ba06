package webhooks

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	clustervalidation "github.com/flotilla-dev/flotilla/cluster/validation"
)

// +kubebuilder:webhook:path=/validate-infrastructure-flotilla-dev-v1alpha1-localdatacenterconfig,mutating=false,failurePolicy=fail,sideEffects=None,groups=infrastructure.flotilla.dev,resources=localdatacenterconfigs,verbs=create;update,versions=v1alpha1,name=validate.localdatacenterconfig.infrastructure.flotilla.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-infrastructure-flotilla-dev-v1alpha1-localmachineconfig,mutating=false,failurePolicy=fail,sideEffects=None,groups=infrastructure.flotilla.dev,resources=localmachineconfigs,verbs=create;update,versions=v1alpha1,name=validate.localmachineconfig.infrastructure.flotilla.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-infrastructure-flotilla-dev-v1alpha1-packetdatacenterconfig,mutating=false,failurePolicy=fail,sideEffects=None,groups=infrastructure.flotilla.dev,resources=packetdatacenterconfigs,verbs=create;update,versions=v1alpha1,name=validate.packetdatacenterconfig.infrastructure.flotilla.dev,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-infrastructure-flotilla-dev-v1alpha1-packetmachineconfig,mutating=false,failurePolicy=fail,sideEffects=None,groups=infrastructure.flotilla.dev,resources=packetmachineconfigs,verbs=create;update,versions=v1alpha1,name=validate.packetmachineconfig.infrastructure.flotilla.dev,admissionReviewVersions=v1

// Config validates one kind of provider config with its function in cluster/validation: on
// create always, on update when the spec changed (a config created under older rules keeps
// taking label and annotation changes, as clusterctl move makes them).
type Config[T ctrlclient.Object] struct {
	kind     schema.GroupKind
	validate func(T) field.ErrorList
	spec     func(T) any
}

var _ admission.Validator[*infrav1.PacketDatacenterConfig] = &Config[*infrav1.PacketDatacenterConfig]{}

// ValidateCreate checks a new config.
func (w *Config[T]) ValidateCreate(_ context.Context, obj T) (admission.Warnings, error) {
	return nil, invalid(w.kind, obj.GetName(), w.validate(obj))
}

// ValidateUpdate checks a config whose spec changed.
func (w *Config[T]) ValidateUpdate(_ context.Context, oldObj, newObj T) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(w.spec(oldObj), w.spec(newObj)) {
		return nil, nil
	}
	return nil, invalid(w.kind, newObj.GetName(), w.validate(newObj))
}

// ValidateDelete allows every deletion.
func (w *Config[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

// SetupConfigWebhooksWithManager registers the validating webhooks of the provider configs that
// have rules (LocalDatacenterConfig, LocalMachineConfig, PacketDatacenterConfig,
// PacketMachineConfig) with mgr's webhook server.
func SetupConfigWebhooksWithManager(mgr ctrl.Manager) error {
	err := setupConfig(mgr, &infrav1.LocalDatacenterConfig{}, clustervalidation.ValidateLocalDatacenterConfig,
		func(o *infrav1.LocalDatacenterConfig) any { return o.Spec })
	if err != nil {
		return err
	}
	err = setupConfig(mgr, &infrav1.LocalMachineConfig{}, clustervalidation.ValidateLocalMachineConfig,
		func(o *infrav1.LocalMachineConfig) any { return o.Spec })
	if err != nil {
		return err
	}
	err = setupConfig(mgr, &infrav1.PacketDatacenterConfig{}, clustervalidation.ValidatePacketDatacenterConfig,
		func(o *infrav1.PacketDatacenterConfig) any { return o.Spec })
	if err != nil {
		return err
	}
	return setupConfig(mgr, &infrav1.PacketMachineConfig{}, clustervalidation.ValidatePacketMachineConfig,
		func(o *infrav1.PacketMachineConfig) any { return o.Spec })
}

func setupConfig[T ctrlclient.Object](mgr ctrl.Manager, obj T, validate func(T) field.ErrorList, spec func(T) any) error {
	gvk, err := apiutil.GVKForObject(obj, mgr.GetScheme())
	if err != nil {
		return fmt.Errorf("setting up a config webhook: %w", err)
	}
	w := &Config[T]{kind: gvk.GroupKind(), validate: validate, spec: spec}
	if err := ctrl.NewWebhookManagedBy(mgr, obj).WithValidator(w).Complete(); err != nil {
		return fmt.Errorf("setting up the %s webhook: %w", gvk.Kind, err)
	}
	return nil
}
