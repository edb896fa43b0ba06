// Package config holds the Kubernetes manifests Flotilla installs into a management cluster and
// embeds them into the binary, so that the CLI and the manager need no files at run time.
//
// The manifests are generated, never edited by hand (`make generate` reproduces them):
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
// CRDs decodes the CRDs and Install applies them with server-side apply and waits until the API
// server serves them. WebhookConfigurations decodes the webhook configurations.
package config
