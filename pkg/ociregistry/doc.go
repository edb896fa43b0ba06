// Package ociregistry is the OCI registry Flotilla embeds for its default setup and its tests:
// go-containerregistry's registry (pkg/registry, an OCI distribution API server) with both
// blobs and manifests kept on disk, so that a restart loses nothing.
//
// # Use
//
//	err := ociregistry.Serve(ctx, ociregistry.Options{Listen: "127.0.0.1:5001", Dir: dir})
//
// serves until ctx is cancelled. NewHandler returns the http.Handler alone, for tests that serve
// it on a loopback listener of their own (httptest.NewServer).
//
// # Storage
//
// go-containerregistry stores blobs through a pluggable BlobHandler but keeps manifests and
// tags in memory. This package stores blobs itself and records every manifest write on disk,
// then replays the record into a fresh in-memory registry on start:
//
//	<Dir>/blobs/sha256/<hex>       every blob (layers, configs), written to a temporary file and
//	                               renamed once go-containerregistry has checked its digest
//	<Dir>/manifests/sha256/<hex>   every manifest body, by the digest of its bytes
//	<Dir>/refs.json                per repository, every reference (tag or digest) with the
//	                               digest and media type of the manifest it names
//
// A manifest PUT is recorded first (the body, then refs.json, replaced atomically), then handed
// to go-containerregistry; when that refuses the manifest (an index whose manifests are
// missing, say), the record is rolled back, and when the record cannot be written the PUT fails
// with 500 and go-containerregistry never sees it. So a client that got 201 finds the manifest
// after a restart, and one that got an error finds nothing, before or after. A manifest DELETE
// is recorded the same way. Manifest writes are serialised. Manifest bodies and blobs are never
// garbage collected (bundles and charts are small; delete Dir to start over).
//
// On start, the references are replayed as PUT requests into go-containerregistry's handler,
// manifests before the indexes that list them, so that its checks pass as they did the first
// time.
//
// The OCI 1.1 referrers API is on (GET /v2/<repo>/referrers/<digest>), computed from the
// manifests' subject fields, so signatures and attestations that tools attach to an artifact can
// be found.
//
// The registry is sized for charts and bundles: go-containerregistry buffers chunked blob
// uploads in memory until they complete, so it is not the place for large container images.
//
// # Security
//
// The registry has no authentication. Serve it on a loopback address (the default setup) or
// behind something that authenticates; with Options.TLSCertFile and TLSKeyFile it serves TLS.
package ociregistry
