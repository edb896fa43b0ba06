package inmemory

import (
	"fmt"
	"runtime"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// versionInfo is the version of a cluster whose Nodes are nodes: the lowest kubelet version of
// its control plane Nodes (of any Node, when none is labelled control plane).
func versionInfo(nodes []corev1.Node) (version.Info, bool) {
	var lowest *kubeversion.Version
	for _, controlPlaneOnly := range []bool{true, false} {
		for _, n := range nodes {
			if _, cp := n.Labels["node-role.kubernetes.io/control-plane"]; controlPlaneOnly && !cp {
				continue
			}
			v, err := kubeversion.Parse(n.Status.NodeInfo.KubeletVersion)
			if err != nil {
				continue
			}
			if lowest == nil || v.Compare(*lowest) < 0 {
				lowest = &v
			}
		}
		if lowest != nil {
			break
		}
	}
	if lowest == nil {
		return version.Info{}, false
	}
	return version.Info{
		Major:        fmt.Sprint(lowest.Major),
		Minor:        fmt.Sprint(lowest.Minor),
		GitVersion:   lowest.String(),
		GitTreeState: "clean",
		GoVersion:    runtime.Version(),
		Compiler:     runtime.Compiler,
		Platform:     "linux/" + runtime.GOARCH,
	}, true
}
