// Package helmreleaseproxy reconciles HelmReleaseProxies: it installs, upgrades, reinstalls and
// uninstalls one Helm release in one workload cluster, and reports the release's state.
//
// # How a release is kept in line
//
// The reconciler reaches the workload cluster through a RESTConfigGetter (CAPI's clustercache
// in production) and hands everything Helm does to an engine.Engine (pkg/helm). The release it
// installs is the one desired.Release builds: the values from spec.valuesFrom (ConfigMaps and
// Secrets in the HelmReleaseProxy's namespace) with spec.values, rendered by the
// HelmChartProxy, merged over them.
//
//   - Install and upgrade: the release is installed or upgraded only when what it is made of
//     changed: chart, repository, version, release name, namespace, Helm options or the hash of
//     the merged values, all digested into status.appliedHash. When the spec still digests to
//     it and the version is exact, a resync reads the release back (a read, never a write) and
//     reinstalls only when it is missing from the cluster. A version range or an empty version
//     is handed to the engine on every resync, which upgrades only when the range now resolves
//     to another chart.
//   - Reinstall: a changed chart, repository, release name or namespace uninstalls the release
//     recorded in status.installed before the new one installs.
//   - InstallOnce: once installed, the release is left alone (it is reinstalled only when it
//     disappears from the cluster).
//   - Ready: True when the release is deployed as the spec says; otherwise False with a reason
//     (InstallFailed, ValuesError, ClusterUnreachable, ...) and, for Helm failures, Helm's own
//     error as the message.
//   - Paused: nothing is done while the HelmReleaseProxy or its Cluster carries the
//     cluster.x-k8s.io/paused annotation, or the Cluster's spec.paused is true.
//
// # Watching the workload cluster
//
// An installed release is looked at again when its objects change, not on a timer: through
// CAPI's ClusterCache the reconciler watches, in each workload cluster, the kinds of the objects
// of its releases (every kind with drift correction on, else the Deployments, StatefulSets and
// DaemonSets whose availability gates rollouts). The watches are metadata-only and shared by the
// releases of a cluster; Helm's meta.helm.sh/release-name and release-namespace annotations map
// an event to the HelmReleaseProxies of that release (an index on the release each stands for).
// A deletion or a change of what a manifest sets wakes releases with drift correction on; a
// status change of a workload wakes only releases waiting for their workloads to become
// available. A release at rest costs its cluster no requests until the resync (or the drift
// interval, when set and shorter). While a cluster cannot be watched, releases are polled as
// before watches existed.
//
// # Deletion and unreachable clusters
//
// The finalizer addons.flotilla.dev/helmreleaseproxy uninstalls the release before the
// HelmReleaseProxy goes, as predelete.Decide says, the rule the packages component follows
// too. When the CAPI Cluster is gone or being deleted, the release goes with the cluster and the
// finalizer is removed at once. While its Flotilla Cluster is torn down,
// spec.uninstallOnClusterDelete applies, counted from the Flotilla Cluster's deletion: Skip
// leaves the release, BestEffort tries once, Ensure keeps trying for UninstallTimeout (5 minutes
// by default). A HelmReleaseProxy deleted alone (its cluster stops matching, its proxy is
// deleted) keeps trying for UninstallTimeout from its own deletion. While it tries, Ready False
// says it is waiting; when it gives up it orphans the release: the finalizer is removed, a
// Warning event Orphaned is recorded and the Orphaned condition is set with the last error, so a
// dead cluster never blocks the deletion of its addons forever.
//
// Every install, upgrade, reinstall and uninstall records an event on the HelmReleaseProxy; every
// failure a Warning event.
package helmreleaseproxy
