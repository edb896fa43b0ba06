package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// DescribeClusterOptions are the options of `flotilla describe cluster`.
type DescribeClusterOptions struct {
	clusterRefOptions
}

// NewDescribeClusterCmd returns `flotilla describe cluster`.
func NewDescribeClusterCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &DescribeClusterOptions{newClusterRefOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Show a cluster's objects as a tree with their conditions",
		Long: `Show cluster NAME as a tree like 'clusterctl describe cluster': the Flotilla Cluster, its Cluster
API Cluster, infrastructure, control plane, machine deployments and machines, each with its Ready
or Available condition. Reads the management cluster given with --kubeconfig (without it: the
local management cluster NAME).`,
		Example: `  flotilla describe cluster mgmt
  flotilla describe cluster w1 --kubeconfig mgmt/mgmt.kubeconfig`,
		Args: exactlyOneArg("the cluster's NAME"),
		RunE: RunE(o),
	}
	o.addNamespaceFlag(cmd, "namespace of the cluster in the management cluster")
	return cmd
}

// Validate has nothing to check beyond the argument cobra checks.
func (o *DescribeClusterOptions) Validate() error { return nil }

// Run prints the tree.
func (o *DescribeClusterOptions) Run(ctx context.Context) error {
	kc, err := o.managementCluster(ctx)
	if err != nil {
		return err
	}
	return client.DescribeCluster(ctx, kc, o.Namespace, o.Name, o.Out)
}
