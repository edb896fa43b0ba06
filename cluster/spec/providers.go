package spec

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	clustervalidation "github.com/flotilla-dev/flotilla/cluster/validation"
)

// ProviderLocal is the local provider: control planes are processes on this machine and workers
// are Nodes simulated by kwok.
const ProviderLocal = clustervalidation.ProviderLocal

// kind is a document kind a spec file may hold.
type kind struct {
	gvk       schema.GroupVersionKind
	newObject func() ctrlclient.Object
	// validate checks an object of the kind with its rules in cluster/validation; nil when the
	// kind has none beyond its schema.
	validate func(ctrlclient.Object) field.ErrorList
}

// provider describes what one infrastructure provider contributes to a spec file. Adding a
// provider (Packet) means adding one entry to providers.
type provider struct {
	// name is what --provider takes.
	name string
	// datacenter is the provider's datacenter config kind, referenced by spec.datacenterRef.
	datacenter kind
	// machineConfig is the provider's machine config kind, referenced by machineGroupRefs.
	machineConfig kind
	// defaultObjects sets the provider's defaults on its datacenter and machine configs (those
	// its CRDs' schemas set in the API server).
	defaultObjects func(datacenter ctrlclient.Object, machineConfigs []ctrlclient.Object)
	// template renders the provider's `generate clusterconfig` output.
	template string
}

// providers lists the supported providers.
func providers() []provider {
	return []provider{localProvider(), packetProvider()}
}

// Providers returns the names of the providers `generate clusterconfig` writes specs for, for
// flag help and errors: Flotilla's own, and Cluster API's in-memory provider through a
// ClusterClass.
func Providers() []string {
	names := make([]string, 0, len(providers())+1)
	for _, p := range providers() {
		names = append(names, p.name)
	}
	return append(names, ProviderInMemory)
}

func providerNamed(name string) (provider, bool) {
	for _, p := range providers() {
		if p.name == name {
			return p, true
		}
	}
	return provider{}, false
}

// clusterKind is the Flotilla Cluster.
var clusterKind = kind{
	gvk:       flotillav1.GroupVersion.WithKind("Cluster"),
	newObject: func() ctrlclient.Object { return &flotillav1.Cluster{} },
}

// kindNamed returns the kind called name, and the provider it belongs to (nil for Cluster and
// GitOpsConfig).
func kindNamed(name string) (kind, *provider, bool) {
	if name == clusterKind.gvk.Kind {
		return clusterKind, nil, true
	}
	if name == gitOpsConfigKind.gvk.Kind {
		return gitOpsConfigKind, nil, true
	}
	if name == clusterClassKind.gvk.Kind {
		return clusterClassKind, nil, true
	}
	for _, p := range providers() {
		for _, k := range []kind{p.datacenter, p.machineConfig} {
			if k.gvk.Kind == name {
				return k, &p, true
			}
		}
	}
	return kind{}, nil, false
}

// kindNames lists every kind a spec file may hold, for error messages.
func kindNames() string {
	names := []string{clusterKind.gvk.Kind}
	for _, p := range providers() {
		names = append(names, p.datacenter.gvk.Kind, p.machineConfig.gvk.Kind)
	}
	names = append(names, gitOpsConfigKind.gvk.Kind, clusterClassKind.gvk.Kind,
		"or a template of a Cluster API provider (a kind ending in Template of a *.cluster.x-k8s.io group)")
	return strings.Join(names, ", ")
}

func localProvider() provider {
	return provider{
		name: clustervalidation.Local.Name,
		datacenter: kind{
			gvk:       infrav1.GroupVersion.WithKind(clustervalidation.Local.DatacenterKind),
			newObject: func() ctrlclient.Object { return &infrav1.LocalDatacenterConfig{} },
			validate: func(obj ctrlclient.Object) field.ErrorList {
				return clustervalidation.ValidateLocalDatacenterConfig(obj.(*infrav1.LocalDatacenterConfig))
			},
		},
		machineConfig: kind{
			gvk:       infrav1.GroupVersion.WithKind(clustervalidation.Local.MachineConfigKind),
			newObject: func() ctrlclient.Object { return &infrav1.LocalMachineConfig{} },
			validate: func(obj ctrlclient.Object) field.ErrorList {
				return clustervalidation.ValidateLocalMachineConfig(obj.(*infrav1.LocalMachineConfig))
			},
		},
		defaultObjects: func(datacenter ctrlclient.Object, _ []ctrlclient.Object) {
			dc := datacenter.(*infrav1.LocalDatacenterConfig)
			if dc.Spec.ControllerManager == nil {
				dc.Spec.ControllerManager = ptr.To(true)
			}
			if dc.Spec.Scheduler == nil {
				dc.Spec.Scheduler = ptr.To(true)
			}
			if dc.Spec.ImageMirror == "" {
				dc.Spec.ImageMirror = infrav1.DefaultImageMirror
			}
		},
		template: localTemplate,
	}
}

// isMachineConfigKind reports whether kindName is p's machine config kind.
func (p provider) isMachineConfigKind(kindName string) bool {
	return p.machineConfig.gvk.Kind == kindName
}
