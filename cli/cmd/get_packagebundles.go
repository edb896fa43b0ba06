package cmd

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// GetPackageBundlesOptions are the options of `flotilla get packagebundles`.
type GetPackageBundlesOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	Output string
}

// NewGetPackageBundlesCmd returns `flotilla get packagebundles`.
func NewGetPackageBundlesCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GetPackageBundlesOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:     "packagebundles",
		Aliases: []string{"packagebundle"},
		Short:   "List the package bundles found in the registries, valid or not",
		Example: `  flotilla get packagebundles --kubeconfig mgmt/mgmt.kubeconfig`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ValidateOutput(o.Output, OutputWide, OutputJSON, OutputYAML); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	AddOutputFlag(cmd, &o.Output, OutputWide, OutputJSON, OutputYAML)
	return cmd
}

// Run lists the bundles.
func (o *GetPackageBundlesOptions) Run(cmd *cobra.Command) error {
	c, err := newPackagesClient(o.global, o.ErrOut)
	if err != nil {
		return err
	}
	bundles, err := c.GetPackageBundles(cmd.Context(), o.global.Kubeconfig)
	if err != nil {
		return err
	}
	if o.Output == OutputJSON || o.Output == OutputYAML {
		list := &packagesv1.PackageBundleList{Items: bundles}
		list.APIVersion, list.Kind = packagesv1.GroupVersion.String(), "PackageBundleList"
		return PrintStructured(o.Out, o.Output, list)
	}
	if len(bundles) == 0 {
		_, err := fmt.Fprintln(o.ErrOut, "No package bundles found yet: see `flotilla get packagebundlecontrollers` for why.")
		return err
	}
	tw := tabwriter.NewWriter(o.Out, 0, 2, 3, ' ', 0)
	header := "NAME\tKUBERNETES\tBUILD\tPACKAGES\tSTATE\tAGE"
	if o.Output == OutputWide {
		header += "\tSOURCE\tDETAIL"
	}
	fmt.Fprintln(tw, header)
	for _, b := range bundles {
		row := fmt.Sprintf("%s\t%s\t%d\t%d\t%s\t%s", b.Name, b.Spec.KubernetesMinor, b.Spec.Build, len(b.Spec.Packages),
			orDash(string(b.Status.State)), duration.HumanDuration(time.Since(b.CreationTimestamp.Time)))
		if o.Output == OutputWide {
			source := "-"
			if s := b.Spec.Source; s != nil {
				source = s.Registry + "/" + s.Repository
			}
			row += fmt.Sprintf("\t%s\t%s", source, orDash(b.Status.Detail))
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}
