// Package config holds the Kubernetes manifests Flotilla installs into a management cluster and
// embeds them into the binary, so that the CLI and the manager need no files at run time.
//
// Most manifests are generated, never edited by hand (`make generate` reproduces them):
//
//   - crd/bases: Flotilla's CustomResourceDefinitions, written by controller-gen from the markers in
//     api/.
//   - crd/capi: Cluster API's CustomResourceDefinitions (core, addons, ipam, runtime) and clusterctl's
//     provider inventory CRD, copied from the sigs.k8s.io/cluster-api module by hack/capi-crds.sh.
//     Flotilla runs no conversion webhook, so each one serves only its storage version (v1beta2).
//   - webhook: admission webhook configurations, Flotilla's own in webhook/ (controller-gen, from the
//     kubebuilder webhook markers) and Cluster API's in webhook/capi/. Their clientConfig names a
//     Service, as generated; the manager rewrites it to the loopback URL it serves on.
//
// One directory is written by hand, with comments that explain each rule:
//
//   - rbac/cluster-creator: the ClusterRole flotilla-cluster-creator, which lets users who are not
//     admins create, upgrade and delete clusters in one namespace, and the public read access to
//     the Flotilla version in kube-public. The manager's own role, rbac/role.yaml, is generated
//     by controller-gen and not embedded.
//
// CRDs decodes the CRDs and Install applies them with server-side apply and waits until the API
// server serves them. WebhookConfigurations decodes the webhook configurations.
// ClusterCreatorRBAC decodes the hand-written RBAC and InstallClusterCreatorRBAC applies it.
package config
