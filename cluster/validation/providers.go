package validation

import (
	"slices"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
)

// Provider is an infrastructure provider as a cluster spec names it: the kind of its datacenter
// config, which spec.datacenterRef names, and of its machine configs, which every
// machineGroupRef of the cluster names.
type Provider struct {
	// Name is the provider's name, such as "local" (what `flotilla generate clusterconfig
	// --provider` takes).
	Name string
	// DatacenterKind is the kind of the provider's datacenter config.
	DatacenterKind string
	// MachineConfigKind is the kind of the provider's machine configs.
	MachineConfigKind string
}

// Names of the providers.
const (
	ProviderLocal  = "local"
	ProviderPacket = "packet"
)

// The providers a Cluster may use.
var (
	// Local runs control planes as processes on the management cluster's machine and simulates
	// worker Nodes with kwok.
	Local = Provider{Name: ProviderLocal, DatacenterKind: flotillav1.LocalDatacenterConfigKind, MachineConfigKind: flotillav1.LocalMachineConfigKind}
	// Packet creates bare-metal devices through the Equinix Metal API and bootstraps them with
	// kubeadm.
	Packet = Provider{Name: ProviderPacket, DatacenterKind: clusterspec.DatacenterConfigKind, MachineConfigKind: clusterspec.MachineConfigKind}
)

// Providers lists the providers a Cluster may use, in the order messages list them.
func Providers() []Provider {
	return []Provider{Local, Packet}
}

// ProviderOf returns the provider whose datacenter config kind is kind.
func ProviderOf(datacenterKind string) (Provider, bool) {
	i := slices.IndexFunc(Providers(), func(p Provider) bool { return p.DatacenterKind == datacenterKind })
	if i < 0 {
		return Provider{}, false
	}
	return Providers()[i], true
}

// DatacenterKinds lists every provider's datacenter config kind.
func DatacenterKinds() []string {
	var kinds []string
	for _, p := range Providers() {
		kinds = append(kinds, p.DatacenterKind)
	}
	return kinds
}

// MachineConfigKinds lists every provider's machine config kind.
func MachineConfigKinds() []string {
	var kinds []string
	for _, p := range Providers() {
		kinds = append(kinds, p.MachineConfigKind)
	}
	return kinds
}
