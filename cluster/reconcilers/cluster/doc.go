// Package cluster reconciles Flotilla Clusters (cluster.flotilla.dev/v1alpha1) into Cluster API
// objects, and reports their state back.
//
// # Providers
//
// What a Cluster becomes depends on its infrastructure provider, and only that is behind a small
// interface (provider.go), chosen once per reconcile from the spec. spec.topology makes a cluster
// of a Cluster API ClusterClass, of any Cluster API provider (clusterclass.go,
// clusterclass_status.go); otherwise the kind of spec.datacenterRef picks the provider of the
// provider registry (infrastructure/providers) whose datacenter config it is. A
// LocalDatacenterConfig makes a cluster of the local provider (a hosted control plane of local
// processes, simulated Nodes; local.go), a PacketDatacenterConfig one of the Packet provider
// (Equinix Metal devices bootstrapped by Cluster API's kubeadm providers; packet.go,
// packet_status.go). Each provider of the registry has its part here (parts in provider.go),
// and the reconciler watches the configs of every one. A provider reads its own objects
// (observe), checks the spec's references (resolve), says what the CAPI Cluster points at and
// which other objects to apply and delete (pure), and turns what it read into the
// ControlPlaneReady and WorkersReady conditions (pure). The reconcile itself — finalizer, pause
// and move, the CAPI Cluster, applying in order, pruning removed worker node groups, deletion,
// Ready and the phase — is the same for every provider.
//
// # What a Cluster becomes
//
// For a local Cluster named NAME the reconciler server-side applies, as field manager
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
// desired objects come from the pure builders of infrastructure/local/clusterspec (the CAPI
// Cluster's common part from infrastructure/capiobjects, desired.go). A worker node group
// removed from the spec has its MachineDeployment deleted, and its LocalMachineTemplate once the
// MachineDeployment is gone. Workers follow the control plane on upgrades: a MachineDeployment
// moves to a new version only once the LocalControlPlane reports that it runs it.
//
// A Packet Cluster becomes the CAPI Cluster NAME, pointing at the PacketCluster NAME and the
// KubeadmControlPlane NAME, with the objects infrastructure/packet/clusterspec builds from the
// PacketDatacenterConfig and PacketMachineConfigs: the PacketCluster, the KubeadmControlPlane and
// its PacketMachineTemplate NAME-control-plane, and per worker node group a
// PacketMachineTemplate, a KubeadmConfigTemplate and a MachineDeployment, each NAME-GROUP.
//
// A Cluster of a ClusterClass named NAME becomes the CAPI Cluster NAME with spec.topology (the
// class, the full version, the control plane's replicas, a MachineDeployment topology per worker
// node group, the variables; see package topology) and nothing else: Cluster API's topology
// controller creates the infrastructure cluster, the control plane and the MachineDeployments
// from the ClusterClass's templates, moves them to a new version on an upgrade (control plane
// first, then the workers), and deletes them. The MachineDeployments carry the Flotilla labels
// through the topology's metadata, so they are found and watched as the other providers' are.
//
// # Ownership, deletion and clusterctl move
//
// The Flotilla Cluster is the controller owner of the CAPI Cluster, the bootstrap Secret and the
// machine templates (LocalMachineTemplates; PacketMachineTemplates and KubeadmConfigTemplates).
// It does not own the infrastructure cluster, the control plane or the MachineDeployments: CAPI
// makes the CAPI Cluster their owner (a Packet cluster's PacketCluster and KubeadmControlPlane are
// created with that owner reference already, packet.go), and deletes them in order (workers
// first, then the control plane) when the CAPI Cluster is deleted. Deleting a Flotilla Cluster
// therefore deletes its CAPI Cluster and waits, behind the cluster.flotilla.dev/cluster
// finalizer, until it is gone; garbage collection then removes the Secret and the templates.
//
// This gives clusterctl move one tree to follow: the Flotilla Cluster (its CRD has the
// move-hierarchy label) -> the CAPI Cluster -> everything CAPI owns, plus the Secret and the
// templates; the datacenter and machine configs move on their own (their CRDs have the move
// label), and nothing Flotilla creates owns them, so deleting a cluster never deletes a config
// another cluster shares. How the reconciler stands aside while a move is under way is
// described in cluster_controller_pause.go.
//
// # Status
//
// Conditions: ControlPlaneReady (the LocalControlPlane is Available and runs the requested
// version; for a Packet cluster, the KubeadmControlPlane is initialized and runs it on healthy
// Nodes, see packet_status.go; for a ClusterClass cluster, the CAPI Cluster reports its control
// plane initialized, available and at the requested version, or a provider that is not
// installed, see clusterclass_status.go), WorkersReady (every group's MachineDeployment has count machines,
// up to date and ready), Ready (both), Paused; each with a reason and a message that says what is
// being waited for. An invalid reference (a datacenterRef or machineGroupRef that names an
// unknown kind or a missing object) or an unsupported version stops the reconcile with a terminal
// error and an InvalidSpec reason whose message names the field; so does a ClusterClass that does
// not exist. The local provider's configs are
// watched, so creating the missing one resumes it; the Packet configs are not, and a Packet
// Cluster waiting for one resumes only when the Cluster itself changes. status.phase, status.kubernetesVersion (what the control plane runs)
// and status.workers (desired and ready) summarise it.
//
// The reconciler owns the Cluster's status but for other components' conditions (PackagesReady,
// the packages component's): it writes its part by server-side apply as field manager
// "flotilla-cluster-controller" (see package objectpatch), so a reconcile from a copy of the
// Cluster that predates another component's condition neither drops it nor writes it back as it
// was. Ready does not read them.
package cluster
