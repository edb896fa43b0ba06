// Package packetcluster reconciles PacketClusters, the CAPI infrastructure clusters of the Packet
// provider.
//
// A PacketCluster's infrastructure is one elastic IP: a public IPv4 reservation in the cluster's
// project and metro, tagged with the cluster's identity so that it is found again rather than
// reserved twice. Its address becomes spec.controlPlaneEndpoint (port 6443); the first control
// plane device gets it assigned (see package packetmachine) and the VIP manager keeps it on a
// healthy control plane node afterwards. Once reserved, status.initialization.provisioned is
// true and status.failureDomains names the metro (or facility).
//
// Every request is made with the key of the PacketClusterIdentity spec.identityRef names, sent
// to that identity's API, and only when the identity allows the PacketCluster's namespace
// (package credentials). Otherwise Ready is False with reason IdentityNotAllowed, or
// CredentialsUnavailable when the identity or its key is missing, naming the identity; no
// request is made, and the reconciler looks again when the identity changes.
//
// Deleting a PacketCluster (CAPI does so after every Machine is gone) removes any assignment the
// elastic IP still has and releases it; the finalizer stays until the API confirms.
package packetcluster
