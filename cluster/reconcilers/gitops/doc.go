// Package gitops reconciles GitOpsConfigs (cluster.flotilla.dev/v1alpha1): it keeps the
// Flotilla Clusters of a management cluster in step with the cluster specs committed to a Git
// repository, so that changing a worker count in Git and committing scales the cluster.
//
// # What a sync does
//
// Every spec.interval (and when the GitOpsConfig or a management Cluster changes) the
// reconciler:
//
//  1. finds the management cluster whose directory it syncs: the one Flotilla Cluster of the
//     API server with spec.management true that manages itself (of several, the one in the
//     GitOpsConfig's namespace). None yet: Ready is False, WaitingForManagementCluster.
//  2. stands aside while that cluster is paused (cluster.x-k8s.io/paused), being deleted, or
//     being moved or upgraded (its Cluster API Cluster is paused, or the Flotilla Cluster
//     reconciler marked it cluster.flotilla.dev/capi-paused): Ready is False, Paused. This is
//     what keeps a sync from recreating, in the source of a clusterctl move, the objects the
//     mover has just deleted there.
//  3. pulls the branch with go-git: a repository given by path is read in place; one given by
//     URL is fetched into a bare repository under CacheDir (<CacheDir>/<management>/<namespace>/
//     <name>), with the credentials of the Secret spec.secretRef names in flotilla-system,
//     within spec.timeout. Credentials are never sent over plain http:// except to a loopback
//     host (cluster/gitops.CheckCredentialsTransport): Ready is False, naming spec.repository.
//  4. reads the specs of the layout (package cluster/gitops): clusters/<management>/cluster.yaml
//     and clusters/<management>/workload-clusters/<name>/cluster.yaml, and parses each with the
//     CLI's spec loader (cluster/spec), so a file is held to the same rules as `flotilla create
//     cluster -f`. Specs of another namespace or naming another GitOpsConfig are skipped; a
//     spec without spec.gitOpsRef, a Cluster whose name is not its directory's, or a workload
//     cluster managed by another management cluster is invalid. One invalid spec stops the
//     whole commit: Ready is False, SyncFailed, and the message names the file, the line where
//     known, and the field.
//  5. server-side applies, as flotilla-gitops-controller, the specs whose file changed since
//     status.lastAppliedCommit (all of them the first time, or when that commit is gone from
//     the history): the provider's configs, then the Cluster. A spec whose file did not change
//     is not applied again, so a cluster deleted with `flotilla delete cluster` (which removes
//     its directory first) is never recreated from an old commit. The Cluster webhook still
//     applies: a commit that changes an immutable field fails with its message.
//  6. records status.lastAppliedCommit and status.clusters, and Ready True (Synced).
//
// GitOpsConfigs sync in parallel (MaxConcurrentReconciles, DefaultMaxConcurrentReconciles by
// default), so a Git server that never answers holds up only its own GitOpsConfigs, each until
// its spec.timeout.
//
// The GitOpsConfig in a spec file is never applied from Git: the repository cannot redirect
// the management cluster to another repository. The reconciler does not delete Clusters whose
// directory is removed from Git; `flotilla delete cluster` deletes clusters.
//
// Events: Applied (Normal) when a sync applied changed specs; SyncFailed (Warning) when a sync
// fails with a new message (a failure that repeats every interval is recorded once).
package gitops
