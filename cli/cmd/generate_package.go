package cmd

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// GeneratePackageOptions are the options of `flotilla generate package`.
type GeneratePackageOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	Package, Cluster, Name string
}

// NewGeneratePackageCmd returns `flotilla generate package`.
func NewGeneratePackageCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GeneratePackageOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "package PACKAGE --cluster NAME",
		Short: "Print a Package manifest to start from",
		Long: `Print a Package manifest for a package of the cluster's active bundle. Its config lists the
package's settings from the version's JSON Schema as comments, with types, descriptions and
defaults: uncomment what you change, then kubectl apply the file.`,
		Example: `  flotilla generate package hello-flotilla --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig > hello.yaml`,
		Args:    exactlyOneArg("PACKAGE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Package = args[0]
			return o.Run(cmd)
		},
	}
	addPackagesClusterFlag(cmd, &o.Cluster, "the cluster the package is for")
	cmd.Flags().StringVar(&o.Name, "package-name", "", "name of the Package (and Helm release); the package's name by default")
	return cmd
}

// Run prints the manifest.
func (o *GeneratePackageOptions) Run(cmd *cobra.Command) error {
	c, err := newPackagesClient(o.global, o.ErrOut)
	if err != nil {
		return err
	}
	manifest, err := c.GeneratePackage(cmd.Context(), o.global.Kubeconfig, o.Cluster, o.Package, o.Name)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(manifest)
	return err
}
