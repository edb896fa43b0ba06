// Package packagebundle reconciles PackageBundles: it decides whether each bundle may be used by
// verifying its signature (spec.signature, over the bundle's canonical content rebuilt from its
// name and spec) with the public key in the package-defaults ConfigMap, and sets its state to
// valid or invalid with a Valid condition that says why.
//
// Verification happens in the API server, not only when the bundle is read from the registry:
// a bundle edited in place (spec changed, signature kept) becomes invalid, and a new key in
// package-defaults re-verifies every bundle. An invalid bundle is never chosen as an active
// bundle and never resolves a Package.
//
// It also deletes old bundles (Keep is the policy): a bundle is kept while a
// PackageBundleController names it as its active bundle, or while it is one of the newest builds
// of its source and Kubernetes minor (3, or bundleHistory in package-defaults); older bundles
// are deleted. The PackageBundleController reconciler records only the bundles this keeps, so a
// deleted bundle does not come back at the next check unless a cluster makes it active again.
package packagebundle
