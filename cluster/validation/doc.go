// Package validation holds the rules of a Flotilla Cluster; those of the provider configs it
// names are their provider's (see Provider configs below). Each rule is written once, as a pure
// function that returns a field.ErrorList; the admission webhooks
// (cluster/webhooks) return the list as it is, in an Invalid status whose causes name the
// fields, and the CLI (cluster/spec) maps each field path to its line in the spec file, so `flotilla
// create cluster` refuses at SetupAndValidate, with the line, everything the API server would
// refuse:
//
//	validation.DefaultCluster(c)
//	errs := validation.ValidateCluster(c)                // a new Cluster
//	errs = validation.ValidateClusterUpdate(oldC, newC)   // a change
//
// Rules that need a lookup stay with who can look: the webhook defaults a workload cluster's
// spec.managementCluster.name from the Clusters of its API server, the Cluster reconciler reports
// references to configs that do not exist, and the CLI checks that the references of a spec file
// resolve in the file.
//
// Each error's Detail is a sentence that says what is wrong and what to do, readable on its own
// (the CLI prints it after the file line and field path; a Required error reads "missing; " +
// Detail there). A value that may be a secret (an SSH key) is never echoed.
//
// # A Cluster
//
// DefaultCluster sets spec.controlPlane.count 1, spec.clusterNetwork (DefaultPodCIDR,
// DefaultServiceCIDR) and a management cluster's spec.managementCluster.name (its own name).
//
// ValidateCluster: the name is a DNS label of at most MaxClusterNameLength characters;
// spec.kubernetesVersion is a minor version ("1.36") pkg/binaries supports; datacenterRef names
// the datacenter config kind of a Provider, and every machineGroupRef that provider's machine
// config kind; the control plane has one instance or more (exactly one on the local provider),
// an endpoint with a host and a TCP port when it has one, and on Packet a machine config; worker
// node group names are unique DNS labels of at most MaxWorkerNodeGroupNameLength characters and
// make a MachineDeployment name <cluster>-<group> that fits in a label value (63 characters);
// counts are not negative; Node labels are valid; a group's nodes are Simulated or Real, and Real
// only on the local provider, whose cluster then has an IPv4 Pod range of /24 or larger apart
// from its Service ranges (each real node gets a /24 of it); a group that pins its own kubernetesVersion
// follows Kubernetes' version skew policy (supported, not newer than the cluster, at most
// flotillav1.MaxWorkerVersionSkew minor versions older); clusterNetwork holds CIDRs; a
// management cluster manages itself and is not a Packet cluster; gitOpsRef names a GitOpsConfig.
//
// ValidateClusterUpdate: spec.management, spec.datacenterRef, spec.gitOpsRef,
// spec.controlPlane.endpoint (once set), spec.clusterNetwork and each worker node group's nodes
// are immutable;
// spec.kubernetesVersion moves one minor version up at a time, never down; a worker node group's
// version (pinned, else the cluster's) never goes down, and a cluster upgrade that would leave a
// pinned group too far behind is refused. The create rules apply again only to what changed
// (the version, the control plane's count, endpoint or machine config, each worker node group
// that is new or whose spec changed beyond scaling), so a Cluster created under older rules can
// always be scaled and have its finalizer removed.
//
// # Tenancy (tenancy.go)
//
// Rules that depend on the other Clusters of the API server and on who asks; the webhook looks
// those up and passes them in, and the CLI does not run these on a file:
//
//	errs = validation.ValidateClusterPeers(c, clustersOfTheAPIServer)          // on create
//	errs = validation.ValidateClusterRequest(oldC, newC, validation.Request{  // oldC nil on create
//		Admin: requestFromAnAdmin, ManagementCluster: "mgmt"})
//
// ValidateClusterPeers: a name is unique across namespaces (what a cluster owns outside its
// namespace is named after its name), and an API server holds one management cluster at most.
// ValidateClusterRequest: only an admin creates a management cluster, names a management
// cluster other than the API server's or changes it, or binds a local control plane to a host
// that is not a loopback address. ValidateLocalDatacenterConfigRequest: only an admin forwards
// another loopback port than the embedded registry's into the nodes' network (imageMirror), or
// names a nodeNetwork outside nodenet.DefaultPool (a range the machine reaches, its LAN behind
// the default route say, would be routed to the cluster's bridge). See docs/security.md.
//
// # A Cluster of a ClusterClass
//
// A Cluster with spec.topology (topology.go) leaves out datacenterRef, every machineGroupRef,
// the control plane endpoint and the groups' version pins, names a worker class for every group,
// and is a workload cluster; a Cluster without names no worker class. Its spec.topology, and
// spec.topology.class, are immutable. Whether the topology fits its ClusterClass (the class
// exists in the namespace, every variable passes its schema) needs the class: the webhook reads
// it and checks with Cluster API's own rules (cluster/webhooks).
//
// # Provider configs
//
// The providers a Cluster may use, and the kinds of their datacenter and machine configs, are
// those of the provider registry (infrastructure/providers). The rules of each provider's
// configs are in its own package, infrastructure/<provider>/clusterspec (local:
// ValidateDatacenterConfig, ValidateMachineConfig; packet: the same and
// ValidateClusterIdentity), which the registry lists for cluster/spec and the webhooks run:
//
//	errs = providers.Packet.DatacenterConfig.Validate(dc) // a provider config
//
// What only an admin may ask of a LocalDatacenterConfig (ValidateLocalDatacenterConfigRequest)
// is here, with the other tenancy rules.
package validation
