// Package clusterspec is the local provider as a cluster spec sees it: the kinds of its configs
// (LocalDatacenterConfig, LocalMachineConfig), their rules (ValidateDatacenterConfig: nodeNetwork
// is a private IPv4 range, /16 to /28, written with its first address, imageMirror
// 127.0.0.1:<port> or localhost:<port>; ValidateMachineConfig: the capacity names resources a
// Node reports, with quantities that are not negative) and defaults, the `flotilla generate
// clusterconfig --provider local` template, and the Cluster API objects a Flotilla Cluster of the
// provider becomes: a Cluster pointing at a LocalCluster and a LocalControlPlane, an empty
// bootstrap data Secret, and per worker node group a LocalMachineTemplate and a
// MachineDeployment. The provider registry (infrastructure/providers) lists it; the Cluster
// reconciler reads what it needs from the management cluster and applies what Objects builds.
//
// The builders are pure: no client, no clock, the same input gives the same objects, with
// deterministic names (<cluster>, <cluster>-bootstrap, <cluster>-<group>). Every object carries
// the labels the reconciler and Cluster API find it by, and sets only the fields Flotilla owns
// (server-side apply removes a field Flotilla stops setting). Workers follow the control plane
// (WorkerVersion): an upgrade restarts the control plane first, then rolls the workers.
package clusterspec
