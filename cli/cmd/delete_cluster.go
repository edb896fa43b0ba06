package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// DeleteClusterOptions are the options of `flotilla delete cluster`.
type DeleteClusterOptions struct {
	clusterRefOptions
	// OutDir is where create wrote NAME/NAME.kubeconfig.
	OutDir string
	// Force deletes a management cluster that still manages workload clusters.
	Force bool
}

// NewDeleteClusterCmd returns `flotilla delete cluster`.
func NewDeleteClusterCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &DeleteClusterOptions{clusterRefOptions: newClusterRefOptions(streams, global, streams.Out), OutDir: "."}
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
		RunE: RunE(o),
	}
	o.addNamespaceFlag(cmd, "namespace of the workload cluster in the management cluster")
	cmd.Flags().StringVar(&o.OutDir, "output-dir", o.OutDir, "directory where create wrote NAME/NAME.kubeconfig (removed with the cluster)")
	cmd.Flags().BoolVar(&o.Force, "force", false, "delete a management cluster even though it still manages workload clusters")
	return cmd
}

// Validate has nothing to check beyond the argument cobra checks.
func (o *DeleteClusterOptions) Validate() error { return nil }

// Run deletes the cluster: the local management cluster NAME without --kubeconfig, else the
// workload cluster NAME of the management cluster it names.
func (o *DeleteClusterOptions) Run(ctx context.Context) error {
	if o.global.Kubeconfig == "" {
		return o.client.DeleteManagementCluster(ctx, client.DeleteManagementClusterOptions{Name: o.Name, OutDir: o.OutDir, Force: o.Force})
	}
	return o.client.DeleteWorkloadCluster(ctx, client.DeleteWorkloadClusterOptions{
		Name: o.Name, Namespace: o.Namespace, Kubeconfig: o.global.Kubeconfig, OutDir: o.OutDir,
	})
}
