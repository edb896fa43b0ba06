// Package local is Flotilla's local infrastructure and control plane provider, the embedded
// default: workload clusters whose control planes are processes on the manager's host and whose
// workers are Nodes simulated by kwok.
//
// It implements three CAPI provider contracts with one reconciler each:
//
//   - LocalControlPlane (controlplane.flotilla.dev), package reconcilers/localcontrolplane: a
//     hosted control plane — etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
//     kwok — with its PKI, the <cluster>-ca and <cluster>-kubeconfig Secrets, and readiness;
//   - LocalCluster (infrastructure.flotilla.dev), package reconcilers/localcluster: the
//     infrastructure cluster, which has nothing to create;
//   - LocalMachine (infrastructure.flotilla.dev), package reconcilers/localmachine: a worker,
//     played by a kwok-simulated Node in the workload cluster. LocalMachineTemplate, which
//     MachineDeployments clone, needs no reconciler.
//
// Setup registers all three with a controller-runtime manager that already runs CAPI's core
// reconcilers and a ClusterCache:
//
//	err := local.Setup(ctx, mgr, local.Options{
//		ClusterCache: clusterCache,
//		Home:         home,    // $FLOTILLA_HOME: control plane data under Home/clusters/<cluster>
//		BinRoot:      binRoot, // binaries.DefaultRoot(): <version>/kube-apiserver, etcd, ...
//	})
//
// The ClusterCache must index Nodes by provider ID (clustercache.NodeProviderIDIndex), as CAPI's
// own manager configures it, for CAPI's Machine controller to match simulated Nodes quickly.
package local
