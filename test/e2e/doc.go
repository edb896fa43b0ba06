// Package e2e runs Flotilla's end-to-end scenarios through cli/client, the library behind the
// commands, against real local clusters: real etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok processes, and the flotilla binary as the manager process.
//
// Scenarios are slow (a management cluster takes tens of seconds), so each creates its clusters
// once and checks everything about them in subtests. The flotilla binary is built once per run
// into a temporary directory.
package e2e
