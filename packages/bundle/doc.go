// Package bundle is the format of Flotilla's curated package bundles and their life as signed
// OCI artifacts: build, sign, verify, push, list and pull.
//
// # What a bundle is
//
// A Bundle lists, for one Kubernetes minor, the packages a cluster may install: each package is
// a Helm chart in an OCI registry, with its versions, each pinned by the digest of the chart's
// OCI manifest and carrying the chart's values.schema.json and the packages it depends on.
// Bundles are named "v<major>-<minor>-<build>" (v1-36-3 is the third build for Kubernetes
// 1.36); a higher build is newer. Name and ParseName convert (pkg/kubeversion reads the minor).
//
// # Canonical content and signature
//
// Canonical(b) is the compact encoding/json encoding of the Bundle struct (fields in their
// declaration order, no maps), so the same bundle always has the same bytes. Sign signs
// SHA-256(Canonical(b)) with an ECDSA P-256 key (ASN.1 DER signature); Verify recomputes the
// canonical content of the bundle it is given and checks the signature with the trusted public
// key, returning ErrUnsigned for a bundle without a signature and ErrBadSignature when the
// content or the key does not match. Keys are PEM: PKCS#8 "PRIVATE KEY" for the signer
// (EncodePrivateKey, ParsePrivateKey, which also reads SEC 1 "EC PRIVATE KEY"), PKIX "PUBLIC
// KEY" for verifiers (EncodePublicKey, ParsePublicKey).
//
// # As an OCI artifact
//
// A bundle is stored at <registry>/<repository>:<bundle name>, one tag per bundle, as a standard
// OCI image manifest that any OCI 1.1 registry accepts (also older ones, which ignore
// artifactType):
//
//	{
//	  "schemaVersion": 2,
//	  "mediaType": "application/vnd.oci.image.manifest.v1+json",
//	  "config": {"mediaType": "application/vnd.oci.empty.v1+json", "size": 2, "digest": "sha256:44136f..."},
//	  "layers": [{"mediaType": "application/vnd.flotilla.bundle.v1+json", "size": ..., "digest": "sha256:...",
//	              "annotations": {"org.opencontainers.image.title": "v1-36-3.json"}}],
//	  "annotations": {
//	    "dev.flotilla.bundle.kubernetes-minor": "1.36",
//	    "dev.flotilla.bundle.signature": "<base64 of the DER signature>"
//	  },
//	  "artifactType": "application/vnd.flotilla.bundle.v1"
//	}
//
// The layer is Canonical(bundle). The signature travels in the manifest's annotation, so the
// manifest digest covers content and signature together; ManifestDigest computes it without a
// registry. Push writes the empty config, the content and the manifest; Pull reads them back (blob digests are checked by
// go-containerregistry, the content is decoded strictly, and a tag must hold the bundle of that
// name, else ErrNameMismatch) without verifying the signature: the caller holds the trusted key
// and calls Verify. List returns the bundle names of one Kubernetes minor found among a
// repository's tags, oldest first; a repository that does not exist has none.
//
// # Reaching registries
//
// Push, Pull and List take go-containerregistry remote options. RemoteOptions builds them from
// a registryconn.Config, the settings Flotilla knows for charts and bundles alike (basic
// credentials, extra CA certificates, skipping TLS verification, plain HTTP). With those options
// plain HTTP is spoken only when PlainHTTP is set (pkg/netaddr.IsLoopback says whether a host is
// one Flotilla treats so by default); otherwise only HTTPS, with no fallback. Without options,
// go-containerregistry's defaults apply (anonymous; HTTPS, falling back to HTTP for loopback and
// private addresses).
//
// # Publishing
//
// Package publish (packages/bundle/publish) packages Helm charts from directories, pushes them
// as OCI Helm charts, builds a bundle per Kubernetes minor, signs it and pushes it; `flotilla
// registry publish` runs it.
package bundle
