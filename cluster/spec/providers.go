package spec

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
)

// The providers a spec file's datacenter and machine configs belong to are those of the
// registry (infrastructure/providers): their kinds, rules, defaults and `generate clusterconfig`
// templates are read from there.
const (
	// ProviderLocal is the local provider: control planes are processes on this machine and
	// workers are Nodes simulated by kwok.
	ProviderLocal = providers.LocalName
	// ProviderPacket is the Packet (Equinix Metal) provider: control plane and workers are
	// bare-metal devices created through the Metal API and bootstrapped with kubeadm.
	ProviderPacket = providers.PacketName
)

// kind is a document kind a spec file may hold.
type kind struct {
	gvk       schema.GroupVersionKind
	newObject func() ctrlclient.Object
	// validate checks an object of the kind with its rules (cluster/validation's, or its
	// provider's); nil when the kind has none beyond its schema.
	validate func(ctrlclient.Object) field.ErrorList
}

// configKind is the kind of a provider's config.
func configKind(c providers.Config) kind {
	return kind{gvk: c.GroupVersionKind(), newObject: c.New, validate: c.Validate}
}

// Providers returns the names of the providers `generate clusterconfig` writes specs for, for
// flag help and errors: those of the registry, and Cluster API's in-memory provider through a
// ClusterClass.
func Providers() []string {
	var names []string
	for _, p := range providers.All() {
		names = append(names, p.Name)
	}
	return append(names, ProviderInMemory)
}

// clusterKind is the Flotilla Cluster.
var clusterKind = kind{
	gvk:       flotillav1.GroupVersion.WithKind("Cluster"),
	newObject: func() ctrlclient.Object { return &flotillav1.Cluster{} },
}

// kindNamed returns the kind called name, and the provider it belongs to (nil for Cluster,
// GitOpsConfig and ClusterClass).
func kindNamed(name string) (kind, *providers.Provider, bool) {
	if name == clusterKind.gvk.Kind {
		return clusterKind, nil, true
	}
	if name == gitOpsConfigKind.gvk.Kind {
		return gitOpsConfigKind, nil, true
	}
	if name == clusterClassKind.gvk.Kind {
		return clusterClassKind, nil, true
	}
	for _, p := range providers.All() {
		for _, c := range []providers.Config{p.DatacenterConfig, p.MachineConfig} {
			if c.Kind == name {
				return configKind(c), &p, true
			}
		}
	}
	return kind{}, nil, false
}

// kindNames lists every kind a spec file may hold, for error messages.
func kindNames() string {
	names := []string{clusterKind.gvk.Kind}
	for _, p := range providers.All() {
		names = append(names, p.DatacenterConfig.Kind, p.MachineConfig.Kind)
	}
	names = append(names, gitOpsConfigKind.gvk.Kind, clusterClassKind.gvk.Kind,
		"or a template of a Cluster API provider (a kind ending in Template of a *.cluster.x-k8s.io group)")
	return strings.Join(names, ", ")
}
