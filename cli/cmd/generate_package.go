package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// GeneratePackageOptions are the options of `flotilla generate package`.
type GeneratePackageOptions struct {
	clientOptions
	// Package is the bundle's package; Cluster the cluster whose active bundle has it; Name the
	// Package's name, Package when empty.
	Package, Cluster, Name string
}

// NewGeneratePackageCmd returns `flotilla generate package`.
func NewGeneratePackageCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GeneratePackageOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "package PACKAGE --cluster NAME",
		Short: "Print a Package manifest to start from",
		Long: `Print a Package manifest for a package of the cluster's active bundle. Its config lists the
package's settings from the version's JSON Schema as comments, with types, descriptions and
defaults: uncomment what you change, then kubectl apply the file.`,
		Example: `  flotilla generate package hello-flotilla --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig > hello.yaml`,
		Args:    exactlyOneArg("PACKAGE"),
		RunE:    RunE(o),
	}
	addPackagesClusterFlag(cmd, &o.Cluster, "the cluster the package is for")
	cmd.Flags().StringVar(&o.Name, "package-name", "", "name of the Package (and Helm release); the package's name by default")
	return cmd
}

// Complete takes the package from the arguments and builds the client.
func (o *GeneratePackageOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Package = args[0]
	return o.clientOptions.Complete(cmd, args)
}

// Validate has nothing to check beyond the argument and the flags cobra checks.
func (o *GeneratePackageOptions) Validate() error { return nil }

// Run prints the manifest.
func (o *GeneratePackageOptions) Run(ctx context.Context) error {
	manifest, err := o.client.GeneratePackage(ctx, o.global.Kubeconfig, o.Cluster, o.Package, o.Name)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(manifest)
	return err
}
