// Package packagereconciler reconciles Packages: it installs each Package into its cluster as a
// Helm release named after the Package, through the shared Helm engine (pkg/helm), and
// uninstalls it through the finalizer packages.flotilla.dev/uninstall.
//
// A Package in namespace flotilla-packages-<cluster> is resolved in the active bundle of the
// PackageBundleController flotilla-packages/<cluster>: spec.packageName must be one of its
// packages, spec.packageVersion one of its versions (the first, newest, when empty), and
// spec.config must satisfy that version's JSON Schema. Invalid input is a terminal error with a
// Ready condition naming the field; a missing PBC or bundle is waited for.
//
// Dependencies are installed first: for each package the version depends on, the Package of
// that package in the same namespace must be Ready (or upgrading: its release is in the cluster
// meanwhile); when there is none the reconciler creates it (named after the package, labelled
// packages.flotilla.dev/dependency-of).
//
// The release is installed or upgraded by the Installer (*helm.Engine), which writes nothing
// when the release already has the chart digest and values. Before it acts, the Package's state
// becomes installing (no release was ever made) or upgrading (status.chartDigest or
// status.valuesHash, recorded from the last release, differ from the desired ones, or the last
// action failed), written at once so that watchers see it; then installed or failed. A resync
// with nothing changed writes neither the status nor the cluster.
//
// The cluster is reached with a rest.Config from CAPI's cluster cache (RESTConfigs); a
// management cluster installs into itself with the manager's own config. An unreachable cluster
// sets Ready False with reason ClusterUnreachable and is retried after a pause; every Helm call is
// bounded by a timeout, so no worker hangs, and each Package reconciles on its own, so one failing
// Package never blocks the others.
package packagereconciler
