package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// UpgradePackagesOptions are the options of `flotilla upgrade packages`.
type UpgradePackagesOptions struct {
	clientOptions
	// Cluster is the cluster whose packages to upgrade; BundleVersion the bundle to make its
	// active one.
	Cluster, BundleVersion string
}

// NewUpgradePackagesCmd returns `flotilla upgrade packages`.
func NewUpgradePackagesCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &UpgradePackagesOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "packages --cluster NAME --bundle-version BUNDLE",
		Short: "Switch a cluster to another package bundle, upgrading its packages",
		Long: `Make BUNDLE (a valid bundle for the cluster's Kubernetes minor, see 'flotilla get packagebundles')
the cluster's active bundle. Packages that do not pin a version move to the bundle's default
version; the others stay where they are and report newer versions as upgrades available.`,
		Example: `  flotilla upgrade packages --cluster w1 --bundle-version v1-36-2 --kubeconfig mgmt/mgmt.kubeconfig`,
		Args:    cobra.NoArgs,
		RunE:    RunE(o),
	}
	addPackagesClusterFlag(cmd, &o.Cluster, "the cluster whose packages to upgrade")
	cmd.Flags().StringVar(&o.BundleVersion, "bundle-version", "", "the bundle to use, e.g. v1-36-2")
	_ = cmd.MarkFlagRequired("bundle-version")
	return cmd
}

// Validate has nothing to check beyond the flags cobra checks.
func (o *UpgradePackagesOptions) Validate() error { return nil }

// Run sets the active bundle.
func (o *UpgradePackagesOptions) Run(ctx context.Context) error {
	if _, err := o.client.UpgradePackages(ctx, o.global.Kubeconfig, o.Cluster, o.BundleVersion); err != nil {
		return err
	}
	_, err := fmt.Fprintf(o.Out, "Cluster %s now uses bundle %s; its packages upgrade (see `flotilla get packages --cluster %s`)\n",
		o.Cluster, o.BundleVersion, o.Cluster)
	return err
}
