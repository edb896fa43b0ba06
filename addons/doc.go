// Package addons installs Helm charts into workload clusters across the fleet. A HelmChartProxy
// (addons.flotilla.dev/v1alpha1) selects Cluster API Clusters by label; the helmchartproxy
// reconciler keeps one HelmReleaseProxy per selected cluster, with values rendered from the
// proxy's template for that cluster (package values); the helmreleaseproxy reconciler installs,
// upgrades and uninstalls each release through the one Helm engine (package engine, backed by
// pkg/helm), reaching the cluster through CAPI's clustercache.
//
// Setup registers both reconcilers with a manager; the manager's "addons" component calls it.
package addons
