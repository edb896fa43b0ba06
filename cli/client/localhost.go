package client

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	localspec "github.com/flotilla-dev/flotilla/infrastructure/local/clusterspec"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
)

// checkLocalHost checks, when management cluster mgmt behind kubeconfig runs on this machine,
// what a new local cluster of s needs from it, so that create refuses at once what the local
// provider would otherwise wait on, reporting it in a condition:
//
//   - the control plane programs of its version (checkLocalBinaries);
//   - a free port for the control plane endpoint, when the spec names one;
//   - for a cluster with real nodes: their programs (binaries.NodeNames), the host's runc and
//     iptables (realnode.Prerequisites), and a node network range this machine does not use
//     when the datacenter config names one.
func (c *Client) checkLocalHost(mgmt, kubeconfig string, s *spec.Spec) error {
	if !c.runsHere(mgmt, kubeconfig) {
		return nil
	}
	if err := c.checkLocalBinaries(mgmt, kubeconfig, s.KubernetesVersion); err != nil {
		return err
	}
	if ep := s.Cluster.Spec.ControlPlane.Endpoint; ep != nil {
		addr := net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port)))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("%s: spec.controlPlane.endpoint: %s is in use on this machine (%v): choose another port, or leave the endpoint out for a free one", s.File, addr, err)
		}
		_ = l.Close()
	}
	if !localspec.HasRealNodes(s.Cluster) {
		return nil
	}
	set, err := binaries.Find(c.BinRoot, s.KubernetesVersion)
	if err == nil {
		err = set.Check(binaries.NodeNames...)
	}
	if err != nil {
		return fmt.Errorf("%s has real nodes, whose programs are not built: %w --nodes", s.File, err)
	}
	if err := realnode.Prerequisites(); err != nil {
		return fmt.Errorf("%s has real nodes: %w", s.File, err)
	}
	dc, ok := s.Datacenter.(*infrav1.LocalDatacenterConfig)
	if !ok || dc.Spec.NodeNetwork == "" {
		return nil
	}
	network, err := netip.ParsePrefix(dc.Spec.NodeNetwork)
	if err != nil {
		return nil //nolint:nilerr // the spec's validation says so
	}
	own := nodenet.ClusterID(controlplane.ClusterDir(c.Home, s.Cluster.Name))
	if err := nodenet.CheckFree(network, own); err != nil {
		return fmt.Errorf("%s: spec.nodeNetwork of LocalDatacenterConfig %s: %w; name a free private range, or leave it out for a free one",
			s.File, dc.Name, err)
	}
	return nil
}
