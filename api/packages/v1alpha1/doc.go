// Package v1alpha1 contains the packages.flotilla.dev/v1alpha1 API: curated packages installed
// into Flotilla clusters.
//
//   - PackageBundleController (short name pbc), one per cluster in namespace flotilla-packages and
//     named after the cluster, says where the cluster's bundles come from and which bundle it uses.
//   - PackageBundle, shared by every cluster in flotilla-packages, is one signed bundle read from an
//     OCI registry: the packages for one Kubernetes minor, with their versions, digests, config
//     schemas and dependencies.
//   - Package, in namespace flotilla-packages-<cluster>, is one package installed into that cluster
//     as a Helm release named after the Package.
//
// It holds types, constants and generated code only.
//
// +kubebuilder:object:generate=true
// +groupName=packages.flotilla.dev
package v1alpha1
