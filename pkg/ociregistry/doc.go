// Package ociregistry is the OCI registry Flotilla embeds for its default setup and its tests:
// go-containerregistry's registry (pkg/registry, an OCI distribution API server) with both
// blobs and manifests kept on disk, so that a restart loses nothing.
//
// # Use
//
//	err := ociregistry.Serve(ctx, ociregistry.Options{Listen: "127.0.0.1:5001", Dir: dir})
//
// serves until ctx is cancelled. NewHandler returns the http.Handler alone, for tests that serve
// it on a loopback listener of their own (httptest.NewServer, httptest.NewTLSServer).
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
//	<Dir>/uploads/<id>             each unfinished blob upload
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
// # Uploads
//
// go-containerregistry keeps unfinished uploads in memory, without a bound and for ever, so this
// package serves the upload protocol itself (POST, PATCH, PUT, GET and DELETE on
// /v2/<name>/blobs/uploads/...) and hands go-containerregistry only reads, manifest writes and
// blob deletes. An upload is a file under <Dir>/uploads, named by 128 random bits and bound to
// its repository, with the running SHA-256 of its content in memory; completing it checks the
// digest and renames the file into the blob store. Limits (Options, with defaults):
//
//   - MaxBlobSize bounds a blob however it is pushed (one request or chunks): 413 SIZE_INVALID,
//     and the upload is deleted;
//   - MaxUploads bounds the uploads in progress: 429 TOOMANYREQUESTS;
//   - an upload that sees no request for UploadTimeout expires and its file is deleted (checked on
//     every upload request and periodically by Serve; Options.Now is the clock), and a request
//     body that stalls that long fails;
//   - a manifest is at most 4 MiB, and one pushed by digest must have that digest (400
//     DIGEST_INVALID; the same holds for blobs).
//
// Uploads do not survive a restart. Request paths are checked before go-containerregistry sees
// them: repository names, tags and digests as the distribution spec writes them (a repository
// name may not contain the components blobs, manifests, tags, referrers or uploads, which would
// make paths ambiguous), a blob Range as bytes=<first>-<last>, a tags page size as a number.
//
// # Security
//
// The registry authenticates every write: Options.Validate, which Serve calls, requires an
// htpasswd file (HTPasswdFile), and off a loopback address (reachable from other machines) TLS
// too (TLSCertFile, TLSKeyFile). Authentication is HTTP basic auth, the scheme Docker, Helm (helm
// registry login), ORAS and containerd speak: a request without valid credentials gets 401 with
// a Basic challenge and a message saying what to do. With Options.AnonymousPull, requests
// without credentials may read (GET and HEAD) and nothing more; a request with wrong credentials
// is refused whatever it does. Users are the lines user:bcrypt-hash of an htpasswd file
// (ParseHTPasswd refuses other hashes; SetHTPasswdUser writes them). Checks run at most
// NumCPU/2 bcrypt comparisons at once, a request naming an unknown user costs as much as a
// known one, and a verified user and password are remembered for 5 minutes under a salted hash.
// Every user may read and write every repository, except Options.PullOnlyUsers, who may only
// read (GET and HEAD; 403 DENIED otherwise).
//
// The default setup (`flotilla registry start`) serves on 127.0.0.1:5001 with anonymous pull,
// for real nodes, and one user, the push credential Flotilla generates into its 0700 home, for
// the CLI: other users of the machine may pull but neither push nor delete.
//
// A handler without HTPasswdFile (NewHandler, for tests that serve it in their own process)
// takes writes from its machine's loopback without credentials, and reads from anywhere.
//
// Each request is logged as one line with its method, path and query, status, user name and
// duration; never its headers, so never its credentials.
package ociregistry
