// Package capi is the manager's "capi" component: Cluster API v1.14's core reconcilers
// (Cluster, Machine, MachineSet, MachineDeployment, MachineHealthCheck) and their admission
// webhooks, and what ClusterClass clusters and ClusterResourceSets need (the ClusterClass, Cluster
// topology, MachineDeployment and MachineSet topology and ClusterResourceSet reconcilers and
// webhooks, with the ClusterTopology feature gate on), wired as Cluster API's own core/main.go
// wires them, without the runtime SDK or MachinePools.
//
// The component runs as its own identity (system:serviceaccount:flotilla-system:capi), bound to
// the ClusterRole flotilla-capi. `make generate` writes that role from the RBAC markers of the
// Cluster API packages Setup wires (their own, in the Cluster API module) and of this package,
// which adds what Cluster API needs on Flotilla's provider kinds: a provider in a group Cluster
// API does not name ships such rules itself.
package capi
