// Package providers is the registry of the infrastructure providers Flotilla drives for a
// Cluster with a spec.datacenterRef: the local provider and Packet. It is the one list of them;
// every part of Flotilla that depends on which providers exist reads it:
//
//   - cluster/validation accepts the datacenter config kinds and machine config kinds of All,
//     and a machine config only of the datacenter's provider;
//   - cluster/spec decodes, defaults and checks the configs of All in a spec file, and renders
//     each provider's `flotilla generate clusterconfig` Template;
//   - the Cluster reconciler (cluster/reconcilers/cluster) picks the provider of a Cluster with
//     OfDatacenterKind, watches the configs of All, and applies what the provider's builders make;
//   - the manager (manager/components.go) runs one component per provider, named after it, whose
//     Setup registers the provider's reconcilers (the registry holds no reconciler, so that the
//     CLI, which reads it through cluster/spec, links none).
//
// A provider is one Provider value. What is its own lives in its folder of infrastructure/: the
// kinds of its configs, their rules and defaults, its template and the pure builders of its
// Cluster API objects in <provider>/clusterspec, its reconcilers and their Setup in <provider>.
// Adding a provider means writing those, adding its value to All, its Setup to the manager's
// components, and giving the Cluster reconciler its part that reads the management cluster (the
// reconciler's and the manager's tests fail until it has them, and the webhook tests until its
// configs have webhooks).
//
// A Cluster of a Cluster API ClusterClass (spec.topology) has no provider here: any Cluster API
// provider serves it through its class (cluster/topology).
package providers
