// Package archive carries package bundles and their charts into networks without access to
// the registry they were published to (air-gapped installs), in three separate steps:
//
//   - Export pulls, for each Kubernetes minor, the newest signed bundle of a bundle repository and
//     every chart version it names (by digest), and writes them into one tar file holding an OCI
//     image layout (https://github.com/opencontainers/image-spec/blob/main/image-layout.md).
//     It needs the registry only, no cluster.
//   - The file is carried by whatever means the site allows.
//   - Import pushes every artifact of such a file to a registry, below an optional path prefix,
//     at the repository path and tag it had in its original registry: the registry becomes a
//     mirror (pkg/registryconn.Mirror) that a management cluster pulls from instead.
//
// Nothing is re-signed or re-packaged: bundles and charts keep their manifests byte for byte, so
// their digests (which the bundles pin) and the bundle signatures hold in the mirror. Each
// manifest of the layout's index.json carries the repository path it came from
// (RepositoryAnnotation, without the registry host) and its tag (RefNameAnnotation); two
// registries' repositories of the same path land in the same mirror repository.
package archive
