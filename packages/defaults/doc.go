// Package defaults reads the management cluster's packages configuration: the ConfigMap
// flotilla-packages/package-defaults (default bundle source, the public key bundles are verified
// with, plain HTTP, how many bundles are kept) and the registry credentials Secret it may name.
package defaults
