// Package caaph converts Cluster API Addon Provider for Helm's (CAAPH's) HelmChartProxies
// (addons.cluster.x-k8s.io/v1alpha1) into Flotilla's (addons.flotilla.dev), for `flotilla addons
// import --from-caaph`: the way in for teams already running CAAPH.
//
// The Flotilla proxy selects the same clusters and installs the same chart, version and values
// (the valuesTemplate is kept as it is: both render it over the cluster's objects as
// .Cluster.metadata.name and the like) under the same release name and namespace, so that
// Flotilla adopts each release CAAPH installed without a new revision (pkg/helm takes a release
// another tool installed, of the same chart version and values, as it is). CAAPH names a release
// per cluster when its proxy names none: the names its HelmReleaseProxies recorded are used, and
// they must be the same in every cluster, as a Flotilla proxy has one release name.
//
// CAAPH objects are read as unstructured objects: Flotilla does not link CAAPH. Settings with no
// Flotilla equivalent are returned as Warnings, never dropped silently.
package caaph
