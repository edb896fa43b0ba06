package cmd

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// GetKubeconfigOptions are the options of `flotilla get kubeconfig`.
type GetKubeconfigOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
	// Name of the cluster; Namespace of it in the management cluster.
	Name, Namespace string
}

// NewGetKubeconfigCmd returns `flotilla get kubeconfig`.
func NewGetKubeconfigCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GetKubeconfigOptions{IOStreams: streams, global: global, Namespace: "default"}
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME",
		Short: "Print the admin kubeconfig of a cluster",
		Long: `Print the admin kubeconfig of cluster NAME, read from its NAME-kubeconfig Secret in the
management cluster given with --kubeconfig (without it: the local management cluster NAME).`,
		Example: `  flotilla get kubeconfig mgmt > mgmt.kubeconfig
  flotilla get kubeconfig w1 --kubeconfig mgmt/mgmt.kubeconfig`,
		Args: exactlyOneArg("the cluster's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			return o.Run(cmd)
		},
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", o.Namespace, "namespace of the cluster in the management cluster")
	return cmd
}

// Run prints the kubeconfig.
func (o *GetKubeconfigOptions) Run(cmd *cobra.Command) error {
	c, err := client.New(o.global.Home, o.global.BinDir, o.ErrOut)
	if err != nil {
		return err
	}
	kc, err := c.ReadManagementCluster(cmd.Context(), o.global.Kubeconfig, o.Name)
	if err != nil {
		return err
	}
	data, err := client.GetKubeconfig(cmd.Context(), kc, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(data)
	return err
}
