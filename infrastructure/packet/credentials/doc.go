// Package credentials turns a PacketCluster's identity reference into a Metal API client.
//
// Metal API keys belong to admins. An admin creates a PacketClusterIdentity (cluster-scoped,
// which cluster creators cannot write) that binds a key, in a Secret in flotilla-system (which
// they cannot read), to the API endpoint it is sent to and to the namespaces whose clusters may
// use it. A PacketDatacenterConfig, and the PacketCluster built from it, only name the identity.
//
// ClientFor checks, before any request and before it even reads the key's Secret, that the
// identity allows the PacketCluster's namespace (Allows: spec.allowedNamespaces, a list of names
// and a label selector; absent allows none, {} every namespace) and that its API URL keeps the
// key off the network in the clear (https, or http to a loopback address). An identity that may
// not be used is an error wrapping ErrNotAllowed, naming the identity and the rule; a missing
// identity, Secret or key wraps ErrUnavailable.
package credentials
