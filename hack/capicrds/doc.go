// Command capicrds copies Cluster API's CustomResourceDefinitions and admission webhook manifest
// from the sigs.k8s.io/cluster-api module into Flotilla's config/ tree. `make generate` runs it
// through hack/capi-crds.sh; the output is committed like every other generated file.
//
// Flotilla embeds the Cluster API core reconcilers but runs no conversion webhook, so each CRD is
// reduced to its storage version (v1beta2), served, with the conversion stanza removed. The CRDs
// get the labels `clusterctl init` would add (clusterctl.cluster.x-k8s.io and
// cluster.x-k8s.io/provider=cluster-api), so that `clusterctl move` discovers their objects. The
// clusterctl provider inventory CRD (providers.clusterctl.cluster.x-k8s.io) is copied as well,
// labelled as clusterctl labels its inventory, because `clusterctl move` reads the inventory of
// both clusters.
//
// Usage:
//
//	go run ./hack/capicrds -capi-dir DIR -capi-version VERSION -crd-out config/crd/capi -webhook-out config/webhook/capi
package main
