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
// user may leave out (namespace "default", spec.controlPlane.count 1, spec.clusterNetwork pods
// 192.168.0.0/16 and services 10.96.0.0/12, and for a management cluster
// spec.managementCluster.name set to its own name) and validate the whole: names, every
// reference, the Kubernetes version (which must be one pkg/binaries supports), address ranges,
// labels. Every problem is reported at once in an *Error, each saying how to fix it:
//
//	w1.yaml:31: document 1 (Cluster "w1"): spec.workerNodeGroups[0].machineGroupRef:
//	    LocalMachineConfig "w1-workers" not found in w1.yaml; add it or fix the name
//
// The result, a *Spec, holds the typed Cluster, datacenter config and machine configs, the full
// Kubernetes version, and every object in the order to apply them.
//
// # Generating
//
// Generate prints a complete spec for a provider with a comment on every field; its output
// always loads. ProviderInMemory prints a cluster of Cluster API's in-memory provider, with the
// ClusterClass "in-memory" and its templates.
package spec
