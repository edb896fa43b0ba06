// Package localmachine reconciles LocalMachine, the CAPI infrastructure machine of the local
// provider: a worker played by a Node that kwok simulates in the workload cluster.
//
// For each LocalMachine owned by a CAPI Machine the reconciler
//
//   - sets spec.providerID to local://<namespace>/<machine>;
//   - waits until the Cluster's control plane is initialized (status.initialization.
//     controlPlaneInitialized) and CAPI's ClusterCache is connected to the workload cluster;
//   - creates, if it does not exist, a Node named after the Machine with that provider ID, the
//     kwok.x-k8s.io/node=fake annotation that makes the control plane's kwok manage it, the
//     label flotilla.dev/simulated=true, the node role label (worker, or control-plane for a
//     control plane Machine), the well-known kubernetes.io/hostname, os and arch labels, and the
//     capacity and allocatable of spec.capacity (each resource not given there defaults to
//     infrav1.DefaultCapacity());
//   - reports status.initialization.provisioned once the Node exists, status.nodeName,
//     status.addresses (Hostname: the Node name; InternalIP: infrav1.NodeAddressIP, the
//     loopback address of the host whose kwok plays the Node), a Ready condition (mirrored by
//     CAPI into the Machine's InfrastructureReady) and a NodeReady condition that follows the
//     Node's own Ready condition, which kwok sets.
//
// CAPI's Machine controller then finds the Node by provider ID, sets the Machine's nodeRef and
// moves it to phase Running. The reconciler watches Nodes in each workload cluster through the
// ClusterCache, so NodeReady follows the Node without polling.
//
// Deleting a LocalMachine deletes its Node. When the workload cluster cannot be reached and the
// Cluster is being deleted, or its control plane never came up, there is no Node worth waiting
// for and the finalizer is removed without it.
package localmachine
