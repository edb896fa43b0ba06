// Package packagebundlecontroller reconciles PackageBundleControllers: it reads a cluster's
// bundle source, turns the signed bundles it finds for the cluster's Kubernetes minor into
// PackageBundle objects, picks the active bundle and reports whether a newer one exists.
//
// A check reads the source (spec.source, else the package-defaults ConfigMap's registry and
// repository) when it is due: on the first reconcile, every spec.upgradeCheckInterval, when the
// source or the cluster's Kubernetes minor changed, and when the
// packages.flotilla.dev/check-upgrades annotation changed (the on-demand trigger), and when
// spec.activeBundle changed to a bundle the last check did not record. Of the bundles listed,
// the newest (see packagebundle.Keep) and the active one are considered: each the API server does
// not hold as valid is pulled and recorded as a PackageBundle with its signature; the packagebundle reconciler verifies it with the public key in package-defaults
// and marks it valid or invalid. Only valid bundles are chosen as active or counted as
// upgrades. An unreachable registry makes the state disconnected and the check is retried with
// the controller's exponential backoff.
//
// States: active (the active bundle is the newest valid one), upgrade available (a newer valid
// bundle exists), disconnected (the source could not be read, or there is none), ignored (no
// Flotilla Cluster has the PackageBundleController's name, or it is outside flotilla-packages).
package packagebundlecontroller
