// Package localcontrolplane reconciles LocalControlPlane, the CAPI control plane of the local
// provider: a hosted control plane whose etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok run as processes on the manager's host, started by package
// pkg/controlplane under $FLOTILLA_HOME/clusters/<cluster>.
//
// # Reconciling
//
// A LocalControlPlane waits for its CAPI Cluster (Available=False, WaitingForCluster): the owner, or
// before CAPI sets the owner reference, the Cluster its cluster.x-k8s.io/cluster-name label names
// whose spec.controlPlaneRef names it.
// Then, in order:
//
//  1. Endpoint. spec.controlPlaneEndpoint is chosen once — host 127.0.0.1 and a free port —
//     and written to the spec before any process starts, so the endpoint never changes and CAPI
//     copies it into the Cluster.
//  2. Binaries. pkg/binaries finds the programs of spec.version under BinRoot. When they are
//     missing, every condition says BinariesMissing with the command that builds them, and the
//     reconciler checks again every 30 seconds.
//  3. Processes. controlplane.Ensure creates the PKI if it is missing, adopts processes that
//     already run and starts the missing ones; it never starts a duplicate, so a restarted
//     manager adopts the control planes an earlier one started. When the <cluster>-ca Secret
//     exists, its CA is the cluster's CA and is handed to Ensure: after clusterctl move or lost
//     data the PKI on disk is restored from it, so kubeconfigs issued before stay valid, and a CA
//     a user provides in that Secret before the cluster starts is used, as with CAPI's kubeadm
//     control plane. When it differs from the CA on disk, Ensure reissues the leaf certificates
//     and restarts the processes that use them.
//  4. Secrets, per the CAPI contract: <cluster>-ca (tls.crt, tls.key) and <cluster>-kubeconfig
//     (key value: an admin kubeconfig whose context is <cluster>-admin@<cluster>, as CAPI's
//     util/kubeconfig writes it), both of type cluster.x-k8s.io/secret, labelled
//     cluster.x-k8s.io/cluster-name and controlled by the LocalControlPlane. The kubeconfig's
//     client certificate is reissued when the CA or the endpoint changed and when half of its
//     one-year lifetime has passed.
//  5. Readiness. controlplane.Ready asks /readyz and /version without waiting.
//
// Status: status.initialization.controlPlaneInitialized becomes true the first time /readyz
// answers and stays true; status.version is the version the API server reports; conditions
// Available (mirrored by CAPI into the Cluster's ControlPlaneAvailable), ProcessesRunning and
// CertificatesAvailable, plus Paused. While the API server starts the reconciler looks again
// every half second; once it is available, every 30 seconds. A new spec.version restarts the
// processes on that version's binaries.
//
// # Supervision
//
// Every process Ensure starts is recorded under the cluster's directory, and the supervisor of
// the Flotilla home (package pkg/supervisor, `flotilla supervisor`) keeps it running: it starts
// an exited process again within a second, at once after a stable run and with a back-off of 1 s
// doubling to a minute after quick exits (package pkg/process). Ensure applies the same policy
// under the same lock, so the reconciler and the supervisor never both start a process. The
// reconciler reads the records' history into ProcessesRunning: True naming the restarted
// processes and how they last ended; False while one waits out its back-off, with reason
// ProcessRestarting, CrashLoopBackOff (3 quick exits in a row) or PortInUse (another program
// took its port), saying when it starts again. The manager of a management cluster is recorded
// in its cluster's directory too, so its restarts show on that cluster's LocalControlPlane. It
// polls the records' modification times every 2 seconds and reconciles the control planes whose
// records changed, so conditions and events follow the supervisor within seconds. The
// management cluster's API server URL is recorded with each control plane
// (controlplane.Config.ManagedBy), so that deleting that management cluster finds its local
// workload clusters even when its API server does not answer.
//
// # Deleting
//
// controlplane.Delete stops every process of the cluster and removes its directory; then the
// finalizer goes, and the Secrets with the LocalControlPlane (they are owned by it).
//
// # One directory per cluster name
//
// The data directory is named after the Cluster, not its namespace, so that a control plane
// keeps its directory when clusterctl move takes its objects to another management cluster. Two
// Clusters of the same name in different namespaces of one management cluster would share it:
// the LocalControlPlane created first keeps it, and the other one reports ClusterNameConflict
// and neither starts nor deletes anything.
//
// # Events
//
// Normal: EndpointChosen, Started (processes started), Adopted (processes found running after a
// manager start), Upgrading (processes restarted on a new spec.version), Available (the API
// server answered /readyz the first time), Deleted. Warning: BinariesMissing, StartFailed,
// ProcessExited (a process exited and waits out its back-off; once per exit), ProcessRestarted
// (a process had stopped, or its flags or certificates changed, and was started again: by the
// supervisor, or by Ensure; the restart count and how it ended), SecretsFailed,
// ClusterNameConflict, DeleteFailed. Neither events nor logs nor conditions carry key material or kubeconfigs.
package localcontrolplane
