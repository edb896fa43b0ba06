// Package capifeatures sets the Cluster API feature gates that every Cluster API controller of a
// Flotilla process reads: the manager's, the kubeadm component's and the in-memory provider
// process's. The gates are process-wide, so one function sets them, before any controller is
// built.
package capifeatures
