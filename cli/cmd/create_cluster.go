package cmd

import (
	"errors"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// CreateClusterOptions are the options of `flotilla create cluster`.
type CreateClusterOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
	// File is the cluster spec.
	File string
	// OutDir receives <name>/<name>.kubeconfig.
	OutDir string
}

// NewCreateClusterCmd returns `flotilla create cluster`.
func NewCreateClusterCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &CreateClusterOptions{IOStreams: streams, global: global, OutDir: "."}
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
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	cmd.Flags().StringVarP(&o.File, "filename", "f", "", "cluster spec file")
	cmd.Flags().StringVar(&o.OutDir, "output-dir", o.OutDir, "directory that receives NAME/NAME.kubeconfig")
	return cmd
}

// Validate checks the flags.
func (o *CreateClusterOptions) Validate() error {
	if o.File == "" {
		return errors.New("-f FILE is required: write one with `flotilla generate clusterconfig NAME --provider local`")
	}
	return nil
}

// Run creates the cluster.
func (o *CreateClusterOptions) Run(cmd *cobra.Command) error {
	c, err := client.New(o.global.Home, o.global.BinDir, o.Out)
	if err != nil {
		return err
	}
	if o.global.Kubeconfig == "" {
		return c.CreateManagementCluster(cmd.Context(), client.CreateManagementClusterOptions{File: o.File, OutDir: o.OutDir})
	}
	return c.CreateWorkloadCluster(cmd.Context(), client.CreateWorkloadClusterOptions{
		File: o.File, Kubeconfig: o.global.Kubeconfig, OutDir: o.OutDir,
	})
}
