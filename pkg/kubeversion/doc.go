// Package kubeversion reads and compares the Kubernetes versions Flotilla meets: the minor
// version a Cluster asks for ("1.36"), the full version of a set of binaries ("v1.36.3"), and
// what a component reports about itself ("v1.36.3-dirty", "v1.36.3+k3s1").
//
// Parse accepts all of them, with or without the leading "v"; a pre-release or build suffix
// after the patch is dropped, so "v1.36.3-dirty" is v1.36.3. Numbers have no leading zeros.
//
//	v, err := kubeversion.Parse("v1.36.3") // Version{Major: 1, Minor: 36, Patch: 3, HasPatch: true}
//	kubeversion.Minor("v1.36.3")           // "1.36"
//	kubeversion.Equal("v1.36.3-dirty", "1.36.3") // true
//	kubeversion.AtLeast("v1.36.0", "v1.35.4")    // true
//
// An empty or unparsable version is not known: it equals nothing (not even another empty one)
// and is not at least anything. Callers that mean "no version asked for" say so before they
// compare.
package kubeversion
