// Package ociimage builds the OCI images that real nodes pull, without Docker, the way ko does:
// a static Go program as the top layer over a minimal base layer made here, and pushes them to
// an OCI registry (the embedded one, package ociregistry) under the names a node's containerd
// mirrors.
//
// # Images
//
// Flotilla lists the images Flotilla builds from programs of the binary cache (package
// binaries, `flotilla binaries build --nodes`): the Pod sandbox's pause
// (registry.k8s.io/pause), CoreDNS (registry.k8s.io/coredns/coredns) and the web server of the
// hello-flotilla chart (ghcr.io/flotilla-dev/hello-flotilla). Each is named as its upstream
// image is, so that manifests and charts that name the upstream image run unchanged.
//
// An image has two layers. The base layer holds /etc/passwd and /etc/group (root, nonroot
// 65532 and nobody 65534), an empty /tmp (mode 1777) and /etc/ssl/certs/ca-certificates.crt,
// the certificate authorities of the host's Debian ca-certificates package (CAFile). The
// program layer holds the program at /<name>, mode 0755, which is the entrypoint (the path the
// upstream images use: /pause, /coredns). Every file has the time 0 and root ownership, so the
// same program and certificates always give the same digests: building again pushes nothing
// new.
//
// # The mirror layout
//
// A node's containerd resolves images of docker.io, registry.k8s.io and ghcr.io through the
// mirror registry only (package realnode writes its hosts.toml). In the mirror, an image is
// stored under its upstream host: MirrorReference("127.0.0.1:5001",
// "registry.k8s.io/pause:3.10") is 127.0.0.1:5001/registry.k8s.io/pause:3.10, and a Docker Hub
// short name such as nginx:1.27 is 127.0.0.1:5001/docker.io/library/nginx:1.27. Any image can
// be mirrored by pushing it there with any OCI client.
package ociimage
