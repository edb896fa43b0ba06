// Package topology is where a Flotilla Cluster of a Cluster API ClusterClass (spec.topology)
// meets Cluster API: Of builds the topology of its Cluster API Cluster, and FlotillaPath names
// the Flotilla Cluster's field behind a field of that topology, so that Cluster API's own
// validation of a topology against its ClusterClass (core/webhooks/admission) can be reported on
// the Flotilla Cluster. The rules on the fields a ClusterClass replaces are cluster/validation's.
//
// The Cluster reconciler applies the topology Of builds; the Cluster webhook builds the same one
// to validate it before the Cluster is stored. A Flotilla Cluster maps to a topology field by
// field:
//
//	spec.topology.class                  -> spec.topology.classRef.name (the Cluster's namespace)
//	spec.topology.variables              -> spec.topology.variables
//	spec.kubernetesVersion "1.36"        -> spec.topology.version "v1.36.3" (the full version)
//	spec.controlPlane.count              -> spec.topology.controlPlane.replicas
//	spec.workerNodeGroups[i]             -> spec.topology.workers.machineDeployments[i]:
//	  .name, .class, .count                 name, class, replicas
//	  .labels                               metadata.labels, with the labels Flotilla finds the
//	                                        MachineDeployment by (cluster.flotilla.dev/cluster-name
//	                                        and cluster.flotilla.dev/worker-node-group); annotated
//	                                        to skip the ControlPlaneIsStable preflight check (Of)
package topology
