// Package archive carries package bundles, their charts and the images they run into networks
// without access to the registry they were published to (air-gapped installs), in three
// separate steps:
//
//   - Export pulls, for each Kubernetes minor, the newest signed bundle of a bundle repository,
//     every chart version it names (by digest) and the images those charts and real nodes run,
//     and writes them into one tar file holding an OCI image layout
//     (https://github.com/opencontainers/image-spec/blob/main/image-layout.md). It needs the
//     registries only, no cluster.
//   - The file is carried by whatever means the site allows.
//   - Import pushes every artifact of such a file to a registry, below an optional path prefix,
//     at the repository path and tag it had in its original registry: the registry becomes a
//     mirror (pkg/registryconn.Mirror) that a management cluster pulls from instead.
//
// Nothing is re-signed or re-packaged: bundles, charts and images keep their manifests byte for
// byte (an image index with every platform it lists), so their digests (which the bundles pin)
// and the bundle signatures hold in the mirror. Each manifest of the layout's index.json carries
// the repository path it came from (RepositoryAnnotation, without the registry host) and its tag
// (RefNameAnnotation); two registries' repositories of the same path land in the same mirror
// repository.
//
// # Images
//
// Bundles do not list images. Export renders each chart version with its default values for a
// cluster of its bundle's minor (helm.Engine.Images: the images of every Pod template and hook)
// and adds the images every real node pulls (realnode.Images). Images are read from an image
// registry in the mirror layout of package ociimage (<registry>/<upstream host>/<repository>,
// where `flotilla image build` pushes and real nodes pull), and keep that path
// (<upstream host>/<repository>) in the archive, by tag, or without a tag (pushed by digest)
// when the chart pins a digest.
package archive
