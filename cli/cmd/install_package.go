package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// InstallPackageOptions are the options of `flotilla install package`.
type InstallPackageOptions struct {
	clientOptions
	client.InstallPackageOptions
	// Wait is how long to wait for the Package to be Ready; 0 does not wait.
	Wait time.Duration
}

// NewInstallPackageCmd returns `flotilla install package`.
func NewInstallPackageCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &InstallPackageOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "package PACKAGE --cluster NAME",
		Short: "Install a curated package into a cluster",
		Long: `Create a Package in the cluster's packages namespace (flotilla-packages-<cluster>) of the
management cluster; the package controller installs it into the cluster as a Helm release named
after the Package. Its config is the values files (-f, merged in order) with --set on top; the
management cluster checks it against the package's JSON Schema and refuses it, naming the path,
when it does not fit. Follow it with 'flotilla get packages --cluster NAME'.`,
		Example: `  flotilla install package hello-flotilla --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig --wait 2m
  flotilla install package hello-flotilla --cluster w1 --package-name hello --set greeting=hi -f values.yaml --kubeconfig mgmt/mgmt.kubeconfig`,
		Args: exactlyOneArg("PACKAGE"),
		RunE: RunE(o),
	}
	addPackagesClusterFlag(cmd, &o.Cluster, "the cluster to install the package into")
	cmd.Flags().StringVar(&o.Name, "package-name", "", "name of the Package (and Helm release); the package's name by default")
	cmd.Flags().StringVar(&o.Version, "package-version", "", "version of the package; the active bundle's default when empty")
	cmd.Flags().StringVar(&o.TargetNamespace, "target-namespace", "", "namespace of the cluster to install into (default flotilla-packages)")
	cmd.Flags().StringArrayVar(&o.Set, "set", nil, "set a config value (a.b=c), as Helm's --set; repeatable")
	cmd.Flags().StringArrayVarP(&o.ValuesFiles, "values", "f", nil, "YAML file of config values; repeatable, merged in order")
	cmd.Flags().DurationVar(&o.Wait, "wait", 0, "wait this long for the package to be Ready (e.g. 2m); 0 returns once it is created")
	return cmd
}

// Complete takes the package from the arguments and builds the client.
func (o *InstallPackageOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Package = args[0]
	return o.clientOptions.Complete(cmd, args)
}

// Validate has nothing to check beyond the argument and the flags cobra checks.
func (o *InstallPackageOptions) Validate() error { return nil }

// Run creates the Package and, with --wait, waits until it is Ready.
func (o *InstallPackageOptions) Run(ctx context.Context) error {
	p, err := o.client.InstallPackage(ctx, o.global.Kubeconfig, o.InstallPackageOptions)
	if err != nil {
		return err
	}
	if o.Wait <= 0 {
		_, err = fmt.Fprintf(o.Out, "Package %s/%s created: installing %s into cluster %s (see `flotilla get packages --cluster %s`)\n",
			p.Namespace, p.Name, p.Spec.PackageName, o.Cluster, o.Cluster)
		return err
	}
	start := time.Now()
	if p, err = o.client.WaitPackageReady(ctx, o.global.Kubeconfig, o.Cluster, p.Name, o.Wait); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "Package %s/%s Ready: %s %s installed into cluster %s in %s\n",
		p.Namespace, p.Name, p.Spec.PackageName, p.Status.CurrentVersion, o.Cluster, time.Since(start).Round(100*time.Millisecond))
	return err
}
