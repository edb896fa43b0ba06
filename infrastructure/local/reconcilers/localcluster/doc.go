// Package localcluster reconciles LocalCluster, the CAPI infrastructure cluster of the local
// provider.
//
// A local cluster has no infrastructure of its own: its control plane is a set of processes on
// the manager's host (see package localcontrolplane) and its workers are Nodes simulated by kwok.
// The reconciler therefore creates nothing. It reports status.initialization.provisioned, which
// CAPI copies into the Cluster's status.initialization.infrastructureProvisioned, and a Ready
// condition, which CAPI mirrors into the Cluster's InfrastructureReady condition.
//
// Provisioned becomes true once the LocalCluster is owned by a CAPI Cluster whose control plane
// is initialized (the Cluster says so, or its LocalControlPlane does, which is sooner), not as
// soon as it is owned. The loopback endpoint the hosted control plane
// serves is the only infrastructure a local cluster has, and CAPI's ClusterCache starts
// connecting to a workload cluster as soon as its infrastructure is provisioned: connecting
// before kube-apiserver serves fails, and ClusterCache then waits a fixed 30 seconds before it
// tries again, which would hold every worker Machine back by that much.
//
// Paused Clusters and LocalClusters (cluster.x-k8s.io/paused) are left alone apart from the
// Paused condition.
package localcluster
