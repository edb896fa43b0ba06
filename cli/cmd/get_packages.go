package cmd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// GetPackagesOptions are the options of `flotilla get packages`.
type GetPackagesOptions struct {
	clientOptions
	outputOptions
	// Cluster is the cluster whose Packages to list.
	Cluster string
}

// NewGetPackagesCmd returns `flotilla get packages`.
func NewGetPackagesCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GetPackagesOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:     "packages --cluster NAME",
		Aliases: []string{"package"},
		Short:   "List the packages installed on a cluster, with their versions and state",
		Example: `  flotilla get packages --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig
  flotilla get packages --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig -o yaml`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	addPackagesClusterFlag(cmd, &o.Cluster, "the cluster whose packages to list")
	o.addFlag(cmd, OutputWide, OutputJSON, OutputYAML)
	return cmd
}

// Run lists the Packages.
func (o *GetPackagesOptions) Run(ctx context.Context) error {
	pkgs, err := o.client.GetPackages(ctx, o.global.Kubeconfig, o.Cluster)
	if err != nil {
		return err
	}
	return packagesOutput(pkgs, o.Cluster, time.Now()).print(o.IOStreams, o.Output)
}

// packagesOutput is the output of get packages for the Packages of cluster.
func packagesOutput(pkgs []packagesv1.Package, cluster string, now time.Time) *listOutput {
	list := &packagesv1.PackageList{Items: pkgs}
	list.APIVersion, list.Kind = packagesv1.GroupVersion.String(), "PackageList"
	out := &listOutput{
		object:  list,
		empty:   fmt.Sprintf("No packages on cluster %s. Install one with `flotilla install package PACKAGE --cluster %s`.", cluster, cluster),
		columns: []string{"NAME", "PACKAGE", "CURRENT", "TARGET", "STATE", "READY", "AGE"},
		wide:    []string{"UPGRADES", "DETAIL"},
	}
	for _, p := range pkgs {
		out.row(p.Name, p.Spec.PackageName, orDash(p.Status.CurrentVersion), orDash(p.Status.TargetVersion),
			orDash(string(p.Status.State)), packageReady(p.Status.Conditions), age(now, p.CreationTimestamp.Time),
			orDash(strings.Join(p.Status.UpgradesAvailable, ",")), orDash(p.Status.Detail))
	}
	return out
}
