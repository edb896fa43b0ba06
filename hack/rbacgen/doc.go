// Command rbacgen writes the roles of the manager's identities: for each identity (the
// manager's own, and one per component, see package manager), controller-gen's RBAC generator
// reads the kubebuilder:rbac markers of the packages that identity runs and writes
// config/rbac/<identity>/role.yaml, a ClusterRole flotilla-<identity> and, for rules limited to a
// namespace, a Role flotilla-<identity> there (plus the Role flotilla-leader-election that every
// identity is bound to). `make generate` runs it; the output is committed like every other
// generated file, and package config embeds it and binds each role to its identity.
//
// The table of identities and packages is in main.go. The embedded Cluster API controllers
// ("capi", "kubeadm") are generated from the markers of the Cluster API packages Flotilla wires,
// read from the sigs.k8s.io/cluster-api module the main module requires, with the markers of the
// Flotilla package that wires them, which adds what they need on Flotilla's provider kinds.
// Cluster API's own config/rbac/role.yaml is the union over every controller Cluster API ships
// (ClusterResourceSets, the runtime SDK, IPAM, CRD migration, metrics authentication...), most of
// which Flotilla does not run: the markers of the packages that do run give the smaller role.
//
// Every rule is justified: justifications.yaml gives, per identity, role, API group, resource
// and resource names, the verbs and the reason (the code that needs the rule, and why these
// verbs). rbacgen fails when a rule of a generated role, or of the hand-written roles of
// config/rbac/cluster-creator, has no justification or one with other verbs, and when a
// justification matches no rule; otherwise it writes docs/rbac.md, every rule with its scope
// and reason.
//
// Usage (from the module root):
//
//	go run ./hack/rbacgen -controller-gen ~/.cache/flotilla/tools/controller-gen-v0.21.0 -out config/rbac -doc docs/rbac.md
package main
