// Package webhooks holds the admission webhooks of a cluster spec: the Flotilla Cluster
// (cluster.flotilla.dev) and the provider configs it names (infrastructure.flotilla.dev). The
// manager serves them and registers the webhook configurations generated from the
// +kubebuilder:webhook markers (config/webhook):
//
//	if err := (&webhooks.Cluster{Admins: admins}).SetupWebhookWithManager(mgr); err != nil {
//		return err
//	}
//	if err := webhooks.SetupConfigWebhooksWithManager(mgr, admins); err != nil {
//		return err
//	}
//
// The rules are not here: they are the pure functions of cluster/validation (a Cluster's) and of
// each provider's package (its configs', infrastructure/<provider>/clusterspec, which the
// provider registry infrastructure/providers lists), which the CLI runs on a spec file too, so that `flotilla create cluster` refuses, with the file's line,
// what the API server would refuse. A webhook returns their field.ErrorList as it is, in an
// Invalid status whose causes name the fields.
//
// Cluster defaults (validation.DefaultCluster, and a workload cluster's
// spec.managementCluster.name: the one management Cluster in the API server, a lookup only the
// webhook can make) and validates (validation.ValidateCluster on create,
// validation.ValidateClusterUpdate on update). It also feeds the tenancy rules what only it
// knows: the API server's Clusters (validation.ValidateClusterPeers, on create) and whether the
// request's user (admission.RequestFromContext) is one of the Admins
// (validation.ValidateClusterRequest). Admins are the users and groups the manager trusts as
// admins (--admin-users, --admin-groups); DefaultAdmins, the groups system:masters and
// flotilla-admins, when none are given.
// A Cluster of a ClusterClass (spec.topology) has its topology validated against the class
// with Cluster API's own rules (core/webhooks/admission, through package topology; topology.go):
// the class exists in the Cluster's namespace, every variable holds a value its schema accepts
// (the cause names spec.topology.variables[NAME]), every group's class is a worker class of the
// ClusterClass; again whenever the spec changes.
//
// Config validates a LocalDatacenterConfig, LocalMachineConfig, PacketDatacenterConfig,
// PacketMachineConfig or PacketClusterIdentity with its provider's validation function: every
// config kind of the registry has one (a test checks it). On create always,
// on update when the spec changed, so a config created under older rules still takes the label
// and annotation changes clusterctl move makes. A PacketDatacenterConfig is also checked against
// the PacketClusterIdentity it names: one that exists must allow the config's namespace (one that
// does not exist yet is admitted with a warning). A LocalDatacenterConfig is also checked against
// who asks (validation.ValidateLocalDatacenterConfigRequest): only an admin points real nodes at
// another image mirror than the embedded registry.
package webhooks
