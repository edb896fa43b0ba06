// Package cluster reconciles Flotilla Clusters (cluster.flotilla.dev/v1alpha1) into Cluster API
// objects of the local provider, and reports their state back.
//
// # What a Cluster becomes
//
// For a Cluster named NAME the reconciler server-side applies, as field manager
// "flotilla-cluster-controller":
//
//	Cluster.cluster.x-k8s.io            NAME             infrastructureRef -> LocalCluster NAME,
//	                                                     controlPlaneRef -> LocalControlPlane NAME,
//	                                                     clusterNetwork from the spec
//	Secret                              NAME-bootstrap   empty bootstrap data for every worker
//	LocalCluster                        NAME
//	LocalControlPlane                   NAME             version from spec.kubernetesVersion
//	                                                     ("1.36" -> "v1.36.3"), processes from
//	                                                     the LocalDatacenterConfig
//	per worker node group GROUP:
//	LocalMachineTemplate                NAME-GROUP       capacity from the group's LocalMachineConfig
//	MachineDeployment                   NAME-GROUP       replicas = count, RollingUpdate
//	                                                     maxSurge 1 / maxUnavailable 0
//
// Every object carries cluster.flotilla.dev/cluster-name=NAME (and cluster.x-k8s.io/cluster-name
// where CAPI expects it); worker objects also carry cluster.flotilla.dev/worker-node-group. The
// desired objects come from pure builder functions (desired.go). A worker node group removed from
// the spec has its MachineDeployment deleted, and its LocalMachineTemplate once the
// MachineDeployment is gone. Workers follow the control plane on upgrades: a MachineDeployment
// moves to a new version only once the LocalControlPlane reports that it runs it.
//
// # Ownership, deletion and clusterctl move
//
// The Flotilla Cluster is the controller owner of the CAPI Cluster, the bootstrap Secret and the
// LocalMachineTemplates. It does not own the LocalCluster, the LocalControlPlane or the
// MachineDeployments: CAPI makes the CAPI Cluster their owner, and deletes them in order (workers
// first, then the control plane) when the CAPI Cluster is deleted. Deleting a Flotilla Cluster
// therefore deletes its CAPI Cluster and waits, behind the cluster.flotilla.dev/cluster
// finalizer, until it is gone; garbage collection then removes the Secret and the templates.
//
// This gives clusterctl move one tree to follow: the Flotilla Cluster (its CRD has the
// move-hierarchy label) -> the CAPI Cluster -> everything CAPI owns, plus the Secret and the
// templates; LocalDatacenterConfigs and LocalMachineConfigs move on their own (their CRDs have the
// move label), and nothing Flotilla creates owns them, so deleting a cluster never deletes a
// config another cluster shares. How the reconciler stands aside while a move is under way is
// described in cluster_controller_pause.go.
//
// # Status
//
// Conditions: ControlPlaneReady (the LocalControlPlane is Available and runs the requested
// version), WorkersReady (every group's MachineDeployment has count machines, up to date and
// ready), Ready (both), Paused; each with a reason and a message that says what is being waited
// for. An invalid reference (a datacenterRef or machineGroupRef that names an unknown kind or a
// missing object) or an unsupported version stops the reconcile with a terminal error and an
// InvalidSpec reason whose message names the field; the configs are watched, so creating the
// missing one resumes it. status.phase, status.kubernetesVersion (what the control plane runs)
// and status.workers (desired and ready) summarise it.
package cluster
