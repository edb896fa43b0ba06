package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// CreateClusterOptions are the options of `flotilla create cluster`.
type CreateClusterOptions struct {
	clusterFileOptions
}

// NewCreateClusterCmd returns `flotilla create cluster`.
func NewCreateClusterCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &CreateClusterOptions{newClusterFileOptions(streams, global, "write one with `flotilla generate clusterconfig NAME --provider local`")}
	cmd := &cobra.Command{
		Use:   "cluster -f FILE",
		Short: "Create a management cluster, or a workload cluster from one",
		Long: `Create the cluster described by FILE (see 'flotilla generate clusterconfig').

Without --kubeconfig, create a management cluster on this machine: a bootstrap cluster creates
it, then moves its objects to it so that it manages itself. The spec needs management: true.

With --kubeconfig of a management cluster, create a workload cluster from it: only
SetupAndValidate, CreateWorkloadCluster and InstallAddOns run. The spec needs management: false.

The kubeconfig of the new cluster is written to ./NAME/NAME.kubeconfig. A failed run writes a
checkpoint; run the same command again to resume.`,
		Example: `  flotilla generate clusterconfig mgmt --provider local --management > mgmt.yaml
  flotilla create cluster -f mgmt.yaml
  flotilla generate clusterconfig w1 --provider local > w1.yaml
  flotilla create cluster -f w1.yaml --kubeconfig mgmt/mgmt.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	o.addFlags(cmd, "directory that receives NAME/NAME.kubeconfig")
	return cmd
}

// Run creates the cluster: a management cluster without --kubeconfig, else a workload cluster
// of the management cluster it names.
func (o *CreateClusterOptions) Run(ctx context.Context) error {
	if o.global.Kubeconfig == "" {
		return o.client.CreateManagementCluster(ctx, client.CreateManagementClusterOptions{File: o.File, OutDir: o.OutDir})
	}
	return o.client.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{
		File: o.File, Kubeconfig: o.global.Kubeconfig, OutDir: o.OutDir,
	})
}
