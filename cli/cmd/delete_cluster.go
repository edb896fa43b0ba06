package cmd

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// DeleteClusterOptions are the options of `flotilla delete cluster`.
type DeleteClusterOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
	// Name of the cluster.
	Name string
	// Namespace of a workload cluster in its management cluster.
	Namespace string
	// OutDir is where create wrote NAME/NAME.kubeconfig.
	OutDir string
	// Force deletes a management cluster that still manages workload clusters.
	Force bool
}

// NewDeleteClusterCmd returns `flotilla delete cluster`.
func NewDeleteClusterCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &DeleteClusterOptions{IOStreams: streams, global: global, OutDir: ".", Namespace: "default"}
	cmd := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Delete a cluster",
		Long: `Delete a cluster.

Without --kubeconfig, delete the local management cluster NAME: every process it started stops
and its data under $FLOTILLA_HOME/clusters/NAME is removed. A management cluster that still
manages workload clusters is kept unless --force is given.

With --kubeconfig of a management cluster, delete workload cluster NAME through it.`,
		Example: `  flotilla delete cluster mgmt
  flotilla delete cluster w1 --kubeconfig mgmt/mgmt.kubeconfig`,
		Args: exactlyOneArg("the cluster's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return o.Run(cmd)
		},
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "namespace of the workload cluster in the management cluster")
	cmd.Flags().StringVar(&o.OutDir, "output-dir", o.OutDir, "directory where create wrote NAME/NAME.kubeconfig (removed with the cluster)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "delete a management cluster even though it still manages workload clusters")
	return cmd
}

// Run deletes the cluster.
func (o *DeleteClusterOptions) Run(cmd *cobra.Command) error {
	c, err := client.New(o.global.Home, o.global.BinDir, o.Out)
	if err != nil {
		return err
	}
	if o.global.Kubeconfig == "" {
		return c.DeleteManagementCluster(cmd.Context(), client.DeleteManagementClusterOptions{Name: o.Name, OutDir: o.OutDir, Force: o.Force})
	}
	return c.DeleteWorkloadCluster(cmd.Context(), client.DeleteWorkloadClusterOptions{
		Name: o.Name, Namespace: o.Namespace, Kubeconfig: o.global.Kubeconfig, OutDir: o.OutDir,
	})
}
