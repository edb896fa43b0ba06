package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// DeletePackageOptions are the options of `flotilla delete package`.
type DeletePackageOptions struct {
	clientOptions
	// Name is the Package's; Cluster the cluster it is installed on.
	Name, Cluster string
	// Wait is how long to wait for the uninstall; 0 does not wait.
	Wait time.Duration
}

// NewDeletePackageCmd returns `flotilla delete package`.
func NewDeletePackageCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &DeletePackageOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:     "package NAME --cluster NAME",
		Aliases: []string{"packages"},
		Short:   "Uninstall a package from a cluster",
		Long: `Delete the Package: the package controller uninstalls its Helm release from the cluster, then
lets the Package go. The command waits for that (--wait 0 returns at once).`,
		Example: `  flotilla delete package hello-flotilla --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig`,
		Args:    exactlyOneArg("NAME"),
		RunE:    RunE(o),
	}
	addPackagesClusterFlag(cmd, &o.Cluster, "the cluster to uninstall the package from")
	cmd.Flags().DurationVar(&o.Wait, "wait", 2*time.Minute, "how long to wait for the uninstall; 0 does not wait")
	return cmd
}

// Complete takes the name from the arguments and builds the client.
func (o *DeletePackageOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	return o.clientOptions.Complete(cmd, args)
}

// Validate has nothing to check beyond the argument and the flags cobra checks.
func (o *DeletePackageOptions) Validate() error { return nil }

// Run deletes the Package.
func (o *DeletePackageOptions) Run(ctx context.Context) error {
	if err := o.client.DeletePackage(ctx, o.global.Kubeconfig, o.Cluster, o.Name, o.Wait); err != nil {
		return err
	}
	verb := "uninstalled"
	if o.Wait <= 0 {
		verb = "being uninstalled"
	}
	_, err := fmt.Fprintf(o.Out, "Package %s %s from cluster %s\n", o.Name, verb, o.Cluster)
	return err
}
