// Package capiobjects builds what the Cluster API objects of a Flotilla Cluster share whatever
// provider Flotilla drives for it (the local provider, Packet): the CAPI Cluster's name, labels
// and network, the names of a worker node group's objects, the labels that tie an object to its
// cluster, the owner reference to the Flotilla Cluster, and a worker node group's
// MachineDeployment. Each provider adds only what is its own: what the CAPI Cluster points at,
// the bootstrap data and the infrastructure template the MachineDeployment points at.
package capiobjects
