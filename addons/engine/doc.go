// Package engine is what the addon reconcilers need from Helm, as a small interface: install or
// upgrade a release, uninstall it, read it back (with the live objects of its manifest), diff
// it, roll it back. Production code satisfies it with the one Helm engine Flotilla has
// (*helm.Engine of pkg/helm, whose types it uses); tests of the reconcilers' own logic use the hand-written Fake,
// and the integration tests run the real engine against a real API server.
//
// Every call takes the workload cluster's *rest.Config, as CAPI's clustercache hands it out:
// nothing here writes a kubeconfig to disk.
package engine
