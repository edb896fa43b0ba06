// Package helmchartproxy reconciles HelmChartProxies: it selects the Cluster API Clusters of the
// proxy's namespace whose labels match spec.clusterSelector and keeps one HelmReleaseProxy per
// selected cluster, which the helmreleaseproxy reconciler installs.
//
//   - Fan-out: each selected Cluster gets the HelmReleaseProxy package desired builds
//     (desired.ReleaseProxy), named by desired.ReleaseProxyName (the proxy's and the cluster's
//     names and a short digest of both, so two proxies never collide), labelled with the proxy's
//     and the cluster's names and controlled by the proxy. Its spec is the proxy's chart, options
//     and valuesFrom, with spec.values rendered from the proxy's valuesTemplate for that cluster
//     (desired.Render, package values). It is applied server-side, so an unchanged proxy
//     and cluster write nothing.
//   - A Cluster that stops matching (or is being deleted) gets its HelmReleaseProxy deleted,
//     whose finalizer uninstalls the release.
//   - A template that fails for a cluster leaves that cluster's HelmReleaseProxy as it was and
//     sets ValuesRendered False naming the cluster and the template line; other clusters go on.
//   - Paused: a proxy with the cluster.x-k8s.io/paused annotation is left alone; a paused
//     Cluster (annotation or spec.paused) keeps its HelmReleaseProxy untouched.
//   - Deletion: the finalizer addons.flotilla.dev/helmchartproxy deletes the proxy's
//     HelmReleaseProxies and waits for them to be gone (their releases uninstalled or orphaned)
//     before letting the proxy go. Garbage collection of the owner reference is not relied on.
//   - Status: matchingClusters, readyClusters, Ready (every selected cluster's HelmReleaseProxy
//     is Ready for its current spec) and ValuesRendered.
package helmchartproxy
