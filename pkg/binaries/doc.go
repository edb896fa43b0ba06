// Package binaries locates the control plane programs Flotilla runs as local processes:
// kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok.
//
// The programs are built from source once per machine by `make controlplane-binaries
// K8S_VERSION=<version>` (hack/build-controlplane.sh) into a cache laid out as
//
//	<root>/<version>/{kube-apiserver,kube-controller-manager,kube-scheduler,etcd,kwok}
//
// where <root> is $FLOTILLA_BIN_CACHE, or ~/.cache/flotilla/bin when it is unset (DefaultRoot).
// Nothing is downloaded at run time.
//
// Supported lists the full Kubernetes versions Flotilla builds, newest first. A Cluster names a
// minor version ("1.36"); ResolveMinor turns it into the full version ("v1.36.3").
//
// Find returns a Set once every program of a version is present and executable. When one is
// missing the error names it, the directory looked in, and the command that builds it:
//
//	set, err := binaries.Find(binaries.DefaultRoot(), "v1.36.3")
//	if err != nil {
//		return err // "... run: make controlplane-binaries K8S_VERSION=v1.36.3"
//	}
//	apiserver := set.Path(binaries.KubeAPIServer)
package binaries
