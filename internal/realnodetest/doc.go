// Package realnodetest gives tests what real nodes (package realnode) need on this machine: the
// node programs of a Kubernetes version, or a skip that says how to get them, and an image
// registry on loopback that holds Flotilla's images, which the nodes use as their mirror. It is
// imported only by _test.go files.
package realnodetest
