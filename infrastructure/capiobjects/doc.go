// Package capiobjects builds what the Cluster API objects of a Flotilla Cluster share whatever
// provider Flotilla drives for it (the local provider, Packet): the names of a worker node
// group's objects, the labels that tie an object to its cluster, and a worker node group's
// MachineDeployment. Each provider adds only what is its own: the bootstrap data and the
// infrastructure template the MachineDeployment points at.
package capiobjects
