package providers

import (
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	localspec "github.com/flotilla-dev/flotilla/infrastructure/local/clusterspec"
	packetspec "github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
)

// Provider is an infrastructure provider as Flotilla knows it: the configs a Cluster of it
// names and the spec that `flotilla generate clusterconfig` writes for it. The reconcilers that
// make its machines are the manager's component of the same name (manager.Components): the CLI
// and the validation that read this registry link no reconciler.
type Provider struct {
	// Name is the provider's name, such as "local": what `flotilla generate clusterconfig
	// --provider` takes, and the name of the manager component that runs its reconcilers.
	Name string
	// DatacenterConfig is the kind spec.datacenterRef names.
	DatacenterConfig Config
	// MachineConfig is the kind every machineGroupRef of the Cluster names.
	MachineConfig Config
	// Template is the text/template of the provider's `flotilla generate clusterconfig` output
	// (cluster/spec renders it).
	Template string
}

// Config is the kind of one of a provider's configs, in infrastructure.flotilla.dev.
type Config struct {
	// Kind is the config's kind, as a Cluster's refs name it.
	Kind string
	// New returns an empty object of the kind.
	New func() ctrlclient.Object
	// Validate checks an object of the kind with the provider's rules; field paths start at
	// spec. The config's admission webhook runs the same rules.
	Validate func(ctrlclient.Object) field.ErrorList
	// Default sets on an object of the kind the defaults its CRD's schema sets in the API
	// server; nil when it has none.
	Default func(ctrlclient.Object)
}

// GroupVersionKind is the config's kind in infrastructure.flotilla.dev's version.
func (c Config) GroupVersionKind() schema.GroupVersionKind {
	return infrav1.GroupVersion.WithKind(c.Kind)
}

// Names of the providers.
const (
	LocalName  = "local"
	PacketName = "packet"
)

// Local runs control planes as processes on the management cluster's machine and simulates
// worker Nodes with kwok (or starts real ones on the same machine).
var Local = Provider{
	Name: LocalName,
	DatacenterConfig: configOf(localspec.DatacenterConfigKind, func() *infrav1.LocalDatacenterConfig { return &infrav1.LocalDatacenterConfig{} },
		localspec.ValidateDatacenterConfig, localspec.DefaultDatacenterConfig),
	MachineConfig: configOf(localspec.MachineConfigKind, func() *infrav1.LocalMachineConfig { return &infrav1.LocalMachineConfig{} },
		localspec.ValidateMachineConfig, nil),
	Template: localspec.Template,
}

// Packet creates bare-metal devices through the Equinix Metal API and bootstraps them with
// kubeadm.
var Packet = Provider{
	Name: PacketName,
	DatacenterConfig: configOf(packetspec.DatacenterConfigKind, func() *infrav1.PacketDatacenterConfig { return &infrav1.PacketDatacenterConfig{} },
		packetspec.ValidateDatacenterConfig, packetspec.DefaultDatacenterConfig),
	MachineConfig: configOf(packetspec.MachineConfigKind, func() *infrav1.PacketMachineConfig { return &infrav1.PacketMachineConfig{} },
		packetspec.ValidateMachineConfig, packetspec.DefaultMachineConfig),
	Template: packetspec.Template,
}

// All lists the providers, in the order messages list them and the manager sets them up.
func All() []Provider {
	return []Provider{Local, Packet}
}

// Named returns the provider called name.
func Named(name string) (Provider, bool) {
	return find(func(p Provider) bool { return p.Name == name })
}

// OfDatacenterKind returns the provider whose datacenter config is of kind.
func OfDatacenterKind(kind string) (Provider, bool) {
	return find(func(p Provider) bool { return p.DatacenterConfig.Kind == kind })
}

// DatacenterKinds lists every provider's datacenter config kind.
func DatacenterKinds() []string {
	kinds := make([]string, 0, len(All()))
	for _, p := range All() {
		kinds = append(kinds, p.DatacenterConfig.Kind)
	}
	return kinds
}

// MachineConfigKinds lists every provider's machine config kind.
func MachineConfigKinds() []string {
	kinds := make([]string, 0, len(All()))
	for _, p := range All() {
		kinds = append(kinds, p.MachineConfig.Kind)
	}
	return kinds
}

func find(match func(Provider) bool) (Provider, bool) {
	all := All()
	i := slices.IndexFunc(all, match)
	if i < 0 {
		return Provider{}, false
	}
	return all[i], true
}

// configOf describes a config kind whose object is a T, from the provider's typed functions.
func configOf[T ctrlclient.Object](kind string, newObject func() T, validate func(T) field.ErrorList, defaults func(T)) Config {
	c := Config{
		Kind:     kind,
		New:      func() ctrlclient.Object { return newObject() },
		Validate: func(obj ctrlclient.Object) field.ErrorList { return validate(obj.(T)) },
	}
	if defaults != nil {
		c.Default = func(obj ctrlclient.Object) { defaults(obj.(T)) }
	}
	return c
}
