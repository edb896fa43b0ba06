package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// NewAddonsCmd returns `flotilla addons`, the group of commands that work on Helm addons.
func NewAddonsCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	cmd := newGroupCmd("addons", "Work with Helm addons (HelmChartProxies)")
	cmd.AddCommand(NewAddonsDiffCmd(streams, global), NewAddonsImportCmd(streams, global))
	return cmd
}

// AddonsDiffOptions are the options of `flotilla addons diff`.
type AddonsDiffOptions struct {
	clientOptions
	// Name is the HelmChartProxy's name.
	Name string
	// Namespace is the HelmChartProxy's namespace; the kubeconfig's when empty.
	Namespace string
}

// NewAddonsDiffCmd returns `flotilla addons diff NAME`.
func NewAddonsDiffCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &AddonsDiffOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "diff NAME",
		Short: "Show what a HelmChartProxy would change in each cluster it selects",
		Long: `Render the HelmChartProxy NAME for every cluster it selects, as the manager would (values
template, valuesFrom, chart version), and print, per cluster, the unified diff from the manifest
installed there to the one the proxy would install. Nothing is changed. Clusters are reached
through their kubeconfig Secrets in the management cluster given with --kubeconfig.`,
		Example: `  flotilla addons diff ingress --kubeconfig mgmt/mgmt.kubeconfig
  flotilla addons diff ingress -n fleet --kubeconfig mgmt/mgmt.kubeconfig`,
		Args: exactlyOneArg("the HelmChartProxy's name"),
		RunE: RunE(o),
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "namespace of the HelmChartProxy (default: the kubeconfig's)")
	return cmd
}

// Complete takes the name from the arguments and the namespace, when -n gives none, from the
// kubeconfig.
func (o *AddonsDiffOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	if o.Namespace == "" && o.global.Kubeconfig != "" {
		o.Namespace = client.KubeconfigNamespace(o.global.Kubeconfig)
	}
	return o.clientOptions.Complete(cmd, args)
}

// Validate has nothing to check beyond the argument cobra checks.
func (o *AddonsDiffOptions) Validate() error { return nil }

// Run prints the diffs.
func (o *AddonsDiffOptions) Run(ctx context.Context) error {
	diffs, err := o.client.DiffAddon(ctx, o.global.Kubeconfig, o.Namespace, o.Name)
	if err != nil {
		return err
	}
	if len(diffs) == 0 {
		_, err := fmt.Fprintf(o.ErrOut, "HelmChartProxy %s/%s selects no cluster.\n", o.Namespace, o.Name)
		return err
	}
	failed := 0
	for _, d := range diffs {
		switch {
		case d.Err != nil:
			failed++
			fmt.Fprintf(o.Out, "=== cluster %s: error: %v\n", d.Cluster, d.Err)
		case d.Diff == "":
			fmt.Fprintf(o.Out, "=== cluster %s: no changes\n", d.Cluster)
		default:
			fmt.Fprintf(o.Out, "=== cluster %s\n%s", d.Cluster, d.Diff)
		}
	}
	if failed > 0 {
		return fmt.Errorf("could not diff %d of %d clusters (see above)", failed, len(diffs))
	}
	return nil
}
