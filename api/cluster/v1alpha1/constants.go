package v1alpha1

// SystemNamespace is the management cluster's namespace of Flotilla itself, which only admins
// may read: the manager's leader election Lease and version record, the provider inventory,
// infrastructure and Git credentials.
const SystemNamespace = "flotilla-system"
