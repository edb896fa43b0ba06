package controlplane

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/flotilla-dev/flotilla/pkg/nodenet"
)

// ensureEgress keeps kube-apiserver on this machine (nodenet.Egress): it makes the control
// plane's cgroup and egress rules exist, letting through the bridge of its node network when it
// has real nodes, and returns cfg with the cgroup kube-apiserver starts in.
func ensureEgress(ctx context.Context, cfg Config, l layout, st state) (Config, error) {
	e := nodenet.Egress{ID: nodenet.ClusterID(string(l))}
	if cfg.RealNodes != nil && st.nodeNetwork().IsValid() {
		e.Bridge = nodenet.Cluster{ID: e.ID}.Bridge()
	}
	dir, err := nodenet.EnsureEgress(ctx, e)
	if err != nil {
		return cfg, err
	}
	cfg.apiserverCgroup = dir
	return cfg, nil
}

// Prepare restores, for the control plane in dir, what a restart of the machine removed and its
// processes need to start: the cgroup kube-apiserver starts in and the egress rules that keep it
// on this machine (kube-apiserver fails to start without the cgroup, so it never runs
// unconfined). The supervisor of the home runs it before starting processes of dir again
// (supervisor.Options.Prepare); a directory that holds no control plane (the registry's) is left
// alone.
func Prepare(ctx context.Context, dir string) error {
	l := layout(dir)
	if _, err := os.Stat(l.state()); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	st, err := loadState(l.state())
	if err != nil {
		return err
	}
	cfg := Config{}
	if st.NodeNetwork != "" {
		cfg.RealNodes = &RealNodes{}
	}
	_, err = ensureEgress(ctx, cfg, l, st)
	return err
}

// deleteEgress removes the cgroup and egress rules of the control plane in l.
func deleteEgress(ctx context.Context, l layout) error {
	return nodenet.DeleteEgress(ctx, nodenet.ClusterID(string(l)))
}
