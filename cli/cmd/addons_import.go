package cmd

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// AddonsImportOptions are the options of `flotilla addons import`.
type AddonsImportOptions struct {
	clientOptions
	// FromCAAPH imports Cluster API Addon Provider for Helm's HelmChartProxies (the one source).
	FromCAAPH bool
	// Namespace limits the import to one namespace; every namespace when empty.
	Namespace string
	DryRun    bool
	Output    string
}

// NewAddonsImportCmd returns `flotilla addons import`.
func NewAddonsImportCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &AddonsImportOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "import --from-caaph",
		Short: "Write Flotilla HelmChartProxies for CAAPH's, adopting the releases CAAPH installed",
		Long: `Read the HelmChartProxies of Cluster API Addon Provider for Helm (addons.cluster.x-k8s.io/v1alpha1)
in the management cluster given with --kubeconfig and write, for each, a Flotilla HelmChartProxy
(addons.flotilla.dev) of the same name and namespace: the same cluster selector, chart, version,
values template, release name and namespace. Flotilla then adopts each release CAAPH installed
as it is: no reinstall, no new revision. Settings Flotilla has no equivalent for are printed as
warnings. A Flotilla proxy that already exists is left alone.

CAAPH's objects are not touched. To delete them without CAAPH uninstalling the releases, stop
CAAPH's controller first (see docs/addons.md).`,
		Example: `  flotilla addons import --from-caaph --dry-run --kubeconfig mgmt/mgmt.kubeconfig
  flotilla addons import --from-caaph -n fleet --kubeconfig mgmt/mgmt.kubeconfig`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	cmd.Flags().BoolVar(&o.FromCAAPH, "from-caaph", false, "import Cluster API Addon Provider for Helm's HelmChartProxies")
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "import the proxies of this namespace only (default: every namespace)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "convert and check with the API server, but write nothing")
	AddOutputFlag(cmd, &o.Output, OutputJSON, OutputYAML)
	return cmd
}

// Validate checks that a source is given and -o.
func (o *AddonsImportOptions) Validate() error {
	if !o.FromCAAPH {
		return errors.New("say where to import from: --from-caaph (Cluster API Addon Provider for Helm)")
	}
	return ValidateOutput(o.Output, OutputJSON, OutputYAML)
}

// Run imports and prints what was imported.
func (o *AddonsImportOptions) Run(ctx context.Context) error {
	imported, err := o.client.ImportFromCAAPH(ctx, o.global.Kubeconfig, o.Namespace, o.DryRun)
	if o.Output != "" && err == nil {
		return PrintStructured(o.Out, o.Output, imported)
	}
	tw := tabwriter.NewWriter(o.Out, 0, 2, 3, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tRELEASE\tRELEASE NAMESPACE\tACTION")
	for _, a := range imported {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Namespace, a.Name, a.ReleaseName, a.ReleaseNamespace, a.Action)
	}
	if ferr := tw.Flush(); ferr != nil && err == nil {
		err = ferr
	}
	for _, a := range imported {
		for _, w := range a.Warnings {
			fmt.Fprintf(o.ErrOut, "Warning: HelmChartProxy %s/%s: %s\n", a.Namespace, a.Name, w)
		}
	}
	return err
}
