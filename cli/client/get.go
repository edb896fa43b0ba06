package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

// ReadManagementCluster connects a read-only command to the management cluster given with
// --kubeconfig (flag), else to the local management cluster named name, after checking (and
// warning about) its version.
func (c *Client) ReadManagementCluster(ctx context.Context, flag, name string) (ctrlclient.Client, error) {
	kubeconfig := flag
	if kubeconfig == "" {
		kubeconfig = c.localKubeconfigPath(name)
		if _, err := os.Stat(kubeconfig); err != nil {
			return nil, fmt.Errorf("no local management cluster named %q on this machine; pass --kubeconfig of the management cluster that manages it", name)
		}
	}
	kc, err := KubeClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := c.CheckCompatibility(ctx, kc, kubeconfig, ReadOnly); err != nil {
		return nil, err
	}
	return kc, nil
}

// LocalManagementClusters lists the management clusters of this machine (those the CLI created
// without --kubeconfig), by name, whether their processes run or not.
func (c *Client) LocalManagementClusters() ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(c.Home, "clusters"))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("listing local clusters: %w", err)
	}
	var names []string
	for _, e := range entries {
		if _, recorded := c.keeper(e.Name()).Inspect(managerProcess); e.IsDir() && recorded {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

// GetClusters lists the Flotilla Clusters of the management cluster behind kubeconfig, in every
// namespace (only in the kubeconfig's namespace when the user may not list them all); with an
// empty kubeconfig, those of every local management cluster.
func (c *Client) GetClusters(ctx context.Context, kubeconfig string) ([]flotillav1.Cluster, error) {
	paths := []string{kubeconfig}
	if kubeconfig == "" {
		names, err := c.LocalManagementClusters()
		if err != nil {
			return nil, err
		}
		paths = paths[:0]
		for _, n := range names {
			if _, serving := c.keeper(n).Running(binaries.KubeAPIServer); !serving && !supervisor.Running(c.Home) {
				return nil, fmt.Errorf("management cluster %q does not run (its processes stopped, as after a restart of this machine; data in %s): bring it back with `flotilla start`",
					n, c.clusterDir(n))
			}
			paths = append(paths, c.localKubeconfigPath(n))
		}
	}
	var out []flotillav1.Cluster
	for _, p := range paths {
		kc, err := KubeClient(p)
		if err != nil {
			return nil, err
		}
		if err := c.CheckCompatibility(ctx, kc, p, ReadOnly); err != nil {
			return nil, err
		}
		list := &flotillav1.ClusterList{}
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = kc.List(lctx, list)
		if apierrors.IsForbidden(err) {
			// A user bound to flotilla-cluster-creator may list only in that namespace.
			err = kc.List(lctx, list, ctrlclient.InNamespace(KubeconfigNamespace(p)))
		}
		cancel()
		if err != nil {
			return nil, fmt.Errorf("listing clusters with %s: %w (is the management cluster running?)", p, err)
		}
		out = append(out, list.Items...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}
