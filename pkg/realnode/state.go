package realnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/filelock"
)

// state is what a node remembers in state.json.
type state struct {
	// Address is the node's address in its cluster's node network, chosen once.
	Address string `json:"address,omitempty"`
	// IDBase is the host id of the node's root, the first of its range (chooseIDs), chosen once.
	IDBase uint32 `json:"idBase,omitempty"`
}

func loadState(path string) (state, error) {
	var st state
	data, err := os.ReadFile(path) //nolint:gosec // the node's own file
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("reading node state: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("parsing %s: %w; remove the node (it is made again)", path, err)
	}
	return st, nil
}

func saveState(path string, st state) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding node state: %w", err)
	}
	return atomicfile.Write(path, append(data, '\n'))
}

// chooseAddress returns st with the node's address: the one recorded, or the lowest address of
// the network after the gateway that no other node of the cluster holds, recorded in the node's
// state file under the lock of the cluster's nodes directory, so that two nodes made at once do
// not take the same one.
func chooseAddress(ctx context.Context, cfg Config, l layout, st state) (state, error) {
	if a, err := netip.ParseAddr(st.Address); err == nil && cfg.Network.Contains(a) {
		return st, nil
	}
	nodesDir := filepath.Dir(cfg.Dir)
	unlock, err := filelock.Lock(ctx, filepath.Join(nodesDir, ".lock"))
	if err != nil {
		return st, err
	}
	defer unlock()
	taken := map[netip.Addr]bool{}
	entries, err := os.ReadDir(nodesDir)
	if err != nil {
		return st, fmt.Errorf("listing %s: %w", nodesDir, err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name() == cfg.Name {
			continue
		}
		other, err := loadState(filepath.Join(nodesDir, e.Name(), "state.json"))
		if a, perr := netip.ParseAddr(other.Address); err == nil && perr == nil {
			taken[a] = true
		}
	}
	for a := cfg.gateway().Next(); cfg.Network.Contains(a); a = a.Next() {
		if !taken[a] && cfg.Network.Contains(a.Next()) { // not the broadcast address
			st.Address = a.String()
			return st, saveState(l.state(), st)
		}
	}
	return st, fmt.Errorf("the node network %s has no address left for node %s", cfg.Network, cfg.Name)
}
