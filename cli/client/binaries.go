package client

import (
	"context"
	"path/filepath"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// BuildBinaries builds the control plane programs of each version (a minor such as "1.35", or a
// supported version; every supported version when none is given) into the binary cache
// (BinRoot), keeping those already built, with progress on Out; with nodes, the programs of real
// nodes and of Flotilla's images too. It returns the sets built.
func (c *Client) BuildBinaries(ctx context.Context, nodes bool, versions ...string) ([]binaries.Set, error) {
	if len(versions) == 0 {
		versions = binaries.Supported
	}
	b := &binaries.Builder{Root: c.BinRoot, Out: c.Out, Nodes: nodes}
	sets := make([]binaries.Set, 0, len(versions))
	for _, v := range versions {
		set, err := b.Build(ctx, v)
		if err != nil {
			return sets, err
		}
		sets = append(sets, set)
	}
	return sets, nil
}

// BinariesStatus says whether the control plane programs of one supported Kubernetes version
// are in the binary cache.
type BinariesStatus struct {
	// Version is the full version, such as "v1.36.3"; Minor its minor, "1.36".
	Version string `json:"version"`
	Minor   string `json:"minor"`
	// Ready is true when every program is there.
	Ready bool `json:"ready"`
	// Missing names the programs that are not there (or not executable).
	Missing []string `json:"missing,omitempty"`
	// Dir is the version's directory in the cache.
	Dir string `json:"dir"`
	// BuildCommand builds what is missing.
	BuildCommand string `json:"buildCommand,omitempty"`
	// NodesReady is true when the programs of real nodes and of Flotilla's images are there
	// too (binaries.NodeNames, binaries.ImageNames); MissingNodes names those that are not.
	NodesReady   bool     `json:"nodesReady"`
	MissingNodes []string `json:"missingNodes,omitempty"`
}

// ListBinaries reports, for each supported Kubernetes version, newest first, whether its
// control plane programs are in the binary cache (BinRoot).
func (c *Client) ListBinaries() []BinariesStatus {
	minors := binaries.SupportedMinors()
	list := make([]BinariesStatus, 0, len(binaries.Supported))
	for i, v := range binaries.Supported {
		set := binaries.Set{Dir: filepath.Join(c.BinRoot, v), Version: v}
		st := BinariesStatus{Version: v, Minor: minors[i], Missing: set.Missing(binaries.Names...), Dir: set.Dir}
		st.Ready = len(st.Missing) == 0
		st.MissingNodes = set.Missing(append(append([]string(nil), binaries.NodeNames...), binaries.ImageNames...)...)
		st.NodesReady = len(st.MissingNodes) == 0
		if !st.Ready {
			st.BuildCommand = set.BuildCommand()
		}
		list = append(list, st)
	}
	return list
}
