package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// GetKubeconfigOptions are the options of `flotilla get kubeconfig`.
type GetKubeconfigOptions struct {
	clusterRefOptions
}

// NewGetKubeconfigCmd returns `flotilla get kubeconfig`.
func NewGetKubeconfigCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GetKubeconfigOptions{newClusterRefOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME",
		Short: "Print the admin kubeconfig of a cluster",
		Long: `Print the admin kubeconfig of cluster NAME, read from its NAME-kubeconfig Secret in the
management cluster given with --kubeconfig (without it: the local management cluster NAME).`,
		Example: `  flotilla get kubeconfig mgmt > mgmt.kubeconfig
  flotilla get kubeconfig w1 --kubeconfig mgmt/mgmt.kubeconfig`,
		Args: exactlyOneArg("the cluster's NAME"),
		RunE: RunE(o),
	}
	o.addNamespaceFlag(cmd, "namespace of the cluster in the management cluster")
	return cmd
}

// Validate has nothing to check beyond the argument cobra checks.
func (o *GetKubeconfigOptions) Validate() error { return nil }

// Run prints the kubeconfig.
func (o *GetKubeconfigOptions) Run(ctx context.Context) error {
	kc, err := o.managementCluster(ctx)
	if err != nil {
		return err
	}
	data, err := client.GetKubeconfig(ctx, kc, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(data)
	return err
}
