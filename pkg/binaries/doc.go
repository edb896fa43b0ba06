// Package binaries locates and builds the control plane programs Flotilla runs as local
// processes: kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok.
//
// The programs are built from source once per machine and version into a cache laid out as
//
//	<root>/<version>/{kube-apiserver,kube-controller-manager,kube-scheduler,etcd,kwok}
//
// where <root> is $FLOTILLA_BIN_CACHE, or ~/.cache/flotilla/bin when it is unset (DefaultRoot).
// Nothing is downloaded at run time.
//
// Supported lists the full Kubernetes versions Flotilla builds, newest first. A Cluster names a
// minor version ("1.36"); ResolveMinor turns it into the full version ("v1.36.3").
//
// # Finding
//
// Find returns a Set once every program of a version is present and executable. When one is
// missing the error names it, the directory looked in, and the command that builds it
// (Set.BuildCommand):
//
//	set, err := binaries.Find(binaries.DefaultRoot(), "v1.36.3")
//	if err != nil {
//		return err // "... run: flotilla binaries build v1.36.3"
//	}
//	apiserver := set.Path(binaries.KubeAPIServer)
//
// # Building
//
// A Builder builds a version's programs with `go build` through the Go module proxy, so that a
// user with only the flotilla binary and Go can build them (`flotilla binaries build 1.35`);
// `make controlplane-binaries` runs that same command. The flotilla binary carries the Go
// modules the programs are built from, embedded from modules/: kube-v<minor> (which requires
// k8s.io/kubernetes at the Supported version and replaces its staging modules), etcd (a main
// package calling etcdmain) and kwok. Each module's go.mod, go.sum and source are stored as
// <name>.txt, since go:embed cannot reach a directory holding another module's go.mod; Build
// writes them out, without the suffix, to a temporary directory and builds there. Programs
// already in the cache are kept; a program appears in the cache only once built completely;
// progress goes to Builder.Out, a line every ProgressEvery compiled packages.
//
// To move to another Kubernetes patch release: copy modules/kube-v<minor> to a scratch
// directory, rename the files without .txt, run `go get k8s.io/kubernetes@<version>`, update the
// replace directives to the matching v0.<minor>.<patch>, run `go mod tidy`, copy go.mod and
// go.sum back as .txt, and change Supported. TestEveryVersionHasItsModules checks that the two
// agree.
package binaries
