// Package webhooks holds the admission webhooks of the cluster.flotilla.dev API.
//
// Cluster defaults and validates Flotilla Clusters; the manager serves it and registers the
// webhook configurations generated from the +kubebuilder:webhook markers (config/webhook):
//
//	if err := (&webhooks.Cluster{}).SetupWebhookWithManager(mgr); err != nil {
//		return err
//	}
//
// Defaults: spec.managementCluster.name (a management cluster names itself; a workload cluster
// the one management Cluster in the API server), spec.controlPlane.count 1, and
// spec.clusterNetwork (DefaultPodCIDR, DefaultServiceCIDR).
//
// On create: the name is a DNS label of at most MaxClusterNameLength characters; the Kubernetes
// version is supported; datacenterRef names a known kind, and every machineGroupRef that kind's
// machine config; worker node group names are unique and <cluster>-<group> fits in a label value;
// clusterNetwork holds CIDRs; gitOpsRef names a GitOpsConfig; a worker node group that pins its
// own kubernetesVersion follows Kubernetes' version skew policy (supported, not newer than the
// cluster, at most flotillav1.MaxWorkerVersionSkew minor versions older). On update: spec.management,
// spec.datacenterRef, spec.gitOpsRef, spec.controlPlane.endpoint (once set) and
// spec.clusterNetwork are immutable, and
// spec.kubernetesVersion moves one minor version up at a time, never down; the create rules apply
// again only to the fields that changed, so an old Cluster can always have its finalizer removed;
// a worker node group's version (pinned, else the cluster's) never goes down, and a cluster
// upgrade that would leave a pinned group too far behind is refused.
// A Cluster of a ClusterClass (spec.topology, topology.go) leaves out datacenterRef, every
// machineGroupRef, the control plane endpoint and the groups' version pins, names a worker class
// for every group, and is a workload cluster; its topology is validated against the ClusterClass
// with Cluster API's own rules (core/webhooks/admission, through package topology): the class
// exists in the Cluster's namespace, every variable holds a value its schema accepts (the cause
// names spec.topology.variables[NAME]), every group's class is a worker class of the ClusterClass.
// Its class is immutable, and the topology is validated again whenever the spec changes.
// Every rejection is an Invalid status whose causes name the fields.
//
// The rules are small functions over the old and new Cluster.
package webhooks
