// Package spec loads, validates and generates cluster spec files.
//
// A cluster spec is a multi-document YAML file that describes one cluster: exactly one Flotilla
// Cluster (cluster.flotilla.dev/v1alpha1) and its infrastructure provider's configs, the
// datacenter config that spec.datacenterRef names and the machine configs that
// spec.controlPlane.machineGroupRef and spec.workerNodeGroups[].machineGroupRef name. For the
// local provider these are LocalDatacenterConfig and LocalMachineConfig
// (infrastructure.flotilla.dev/v1alpha1). A provider is one entry in an internal table, so the
// Packet provider's kinds are added there. A Cluster of a Cluster API ClusterClass
// (spec.topology, topology.go) names no datacenter or machine configs: its file may hold the
// ClusterClass it names with the templates the class references, of any Cluster API provider
// (applied first, for an admin; a user who may only create clusters leaves them out), and
// Spec.Provider is ProviderClusterClass. A spec may also hold the GitOpsConfig that
// spec.gitOpsRef names (a management cluster's spec must): it is returned apart from the other
// objects (Spec.GitOpsConfig), since it is applied to the management cluster only.
//
// # Loading
//
// Load and Parse decode every document strictly: a document of an unknown kind or apiVersion,
// an unknown field (with a suggestion when it looks misspelt), a key set twice, or a value of
// the wrong type is an error that names the file line, the document (by index, kind and name)
// and the field path. Invalid YAML is an error with its line. Then they apply the defaults a
// user may leave out (namespace "default", cluster/validation.DefaultCluster's, and the provider
// configs' schema defaults, from the provider registry infrastructure/providers) and validate the
// whole with the rules of cluster/validation and of each provider's configs (their provider's,
// read from the registry), the same functions the API server's webhooks run, so a spec that loads is one the API server
// accepts: names, the Kubernetes version (which must be one pkg/binaries supports) and the
// version skew of worker node groups, the MachineDeployment names <cluster>-<group>, address
// ranges, labels, and every provider config. Each of their field errors becomes a problem at its
// field's line. This package adds what only a file has: one Cluster, one namespace, one
// datacenter config, and references that resolve to documents of the file. Every problem is
// reported at once in an *Error, each saying how to fix it:
//
//	w1.yaml:31: document 1 (Cluster "w1"): spec.workerNodeGroups[0].machineGroupRef:
//	    LocalMachineConfig "w1-workers" not found in w1.yaml; add it or fix the name
//
// The result, a *Spec, holds the typed Cluster, datacenter config and machine configs, the full
// Kubernetes version, and every object in the order to apply them.
//
// # Generating
//
// Generate prints a complete spec for a provider of the registry (its Template) with a comment
// on every field; its output always loads. ProviderInMemory prints a cluster of Cluster API's in-memory provider, with the
// ClusterClass "in-memory" and its templates.
package spec
