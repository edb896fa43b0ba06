package controlplane

import (
	"context"
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/flotilla-dev/flotilla/pkg/filelock"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/realnode"
)

// networksLock serialises the choice of node networks across the clusters of this host, so that
// two clusters set up at once do not pick the same range.
var networksLock = filepath.Join(realnode.RuntimeRoot, "networks.lock")

// nodeNetwork returns the recorded node network, the zero Prefix when there is none.
func (st state) nodeNetwork() netip.Prefix {
	p, _ := netip.ParsePrefix(st.NodeNetwork)
	return p
}

// ensureNodeNetwork makes the host side of the node network of a control plane with real nodes
// exist (package nodenet): the network cfg names, else the one recorded in st, else a free one.
// A range the host uses for something else is refused. kube-apiserver's port and the image
// mirror's are forwarded from the gateway. It returns st with the network recorded.
func ensureNodeNetwork(ctx context.Context, cfg Config, l layout, st state) (state, error) {
	if cfg.RealNodes == nil {
		return st, nil
	}
	id := nodenet.ClusterID(string(l))
	network := cfg.RealNodes.Network
	if !network.IsValid() {
		network = st.nodeNetwork()
	}
	unlock, err := filelock.Lock(ctx, networksLock)
	if err != nil {
		return st, err
	}
	defer unlock()
	if !network.IsValid() {
		if network, err = nodenet.ChooseNetwork(); err != nil {
			return st, err
		}
	} else if err := nodenet.CheckFree(network, id); err != nil {
		return st, fmt.Errorf("the node network of %s: %w; name a range this machine does not use", cfg.Name, err)
	}
	c := nodenet.Cluster{ID: id, Network: network, Forwards: []uint16{uint16(st.APIServerPort), cfg.RealNodes.mirrorPort()}} //nolint:gosec // a TCP port
	if err := nodenet.EnsureCluster(ctx, c); err != nil {
		return st, fmt.Errorf("setting up the node network of %s: %w", cfg.Name, err)
	}
	st.NodeNetwork = network.String()
	return st, nil
}

// deleteNodeNetwork removes the host side of the node network recorded in l's state, if any.
func deleteNodeNetwork(ctx context.Context, l layout) error {
	st, err := loadState(l.state())
	if err != nil || st.NodeNetwork == "" {
		return err
	}
	if err := nodenet.DeleteCluster(ctx, nodenet.ClusterID(string(l))); err != nil {
		return fmt.Errorf("deleting the node network %s: %w", st.NodeNetwork, err)
	}
	return nil
}
