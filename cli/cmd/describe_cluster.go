package cmd

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// DescribeClusterOptions are the options of `flotilla describe cluster`.
type DescribeClusterOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
	// Name of the cluster; Namespace of it in the management cluster.
	Name, Namespace string
}

// NewDescribeClusterCmd returns `flotilla describe cluster`.
func NewDescribeClusterCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &DescribeClusterOptions{IOStreams: streams, global: global, Namespace: "default"}
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
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return o.Run(cmd)
		},
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "namespace of the cluster in the management cluster")
	return cmd
}

// Run prints the tree.
func (o *DescribeClusterOptions) Run(cmd *cobra.Command) error {
	c, err := client.New(o.global.Home, o.global.BinDir, o.ErrOut)
	if err != nil {
		return err
	}
	kc, err := c.ReadManagementCluster(cmd.Context(), o.global.Kubeconfig, o.Name)
	if err != nil {
		return err
	}
	return client.DescribeCluster(cmd.Context(), kc, o.Namespace, o.Name, o.Out)
}
