// Package packages is Flotilla's curated packages component: Setup wires the controllers of
// packages.flotilla.dev (PackageBundleController, PackageBundle, Package, the cluster lifecycle
// hooks) and the Package validation webhook into a manager, with the real bundle source
// (packages/bundle) and the shared Helm engine (pkg/helm) behind the small interfaces the
// reconcilers declare.
//
// The pieces:
//   - reconcilers/clusterlifecycle: a namespace flotilla-packages-<cluster> and a
//     PackageBundleController for every Flotilla Cluster; cleanup on deletion;
//   - reconcilers/packagebundlecontroller: signed bundles from the registry into PackageBundles;
//   - reconcilers/packagebundle: each PackageBundle's signature verified, valid or invalid;
//     old bundles no cluster uses deleted;
//   - reconcilers/package: Helm releases in the clusters;
//   - webhooks: Package validation against the active bundle and its JSON Schemas;
//   - catalog: resolution and config validation shared by the webhook and the controller;
//   - defaults: the package-defaults ConfigMap.
package packages
