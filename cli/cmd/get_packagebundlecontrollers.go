package cmd

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// GetPackageBundleControllersOptions are the options of `flotilla get packagebundlecontrollers`.
type GetPackageBundleControllersOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	Output string
}

// NewGetPackageBundleControllersCmd returns `flotilla get packagebundlecontrollers`.
func NewGetPackageBundleControllersCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GetPackageBundleControllersOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:     "packagebundlecontrollers",
		Aliases: []string{"packagebundlecontroller", "pbc"},
		Short:   "List each cluster's package bundle controller: source, active bundle, state",
		Example: `  flotilla get packagebundlecontrollers --kubeconfig mgmt/mgmt.kubeconfig`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ValidateOutput(o.Output, OutputJSON, OutputYAML); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	AddOutputFlag(cmd, &o.Output, OutputJSON, OutputYAML)
	return cmd
}

// Run lists the PBCs.
func (o *GetPackageBundleControllersOptions) Run(cmd *cobra.Command) error {
	c, err := newPackagesClient(o.global, o.ErrOut)
	if err != nil {
		return err
	}
	pbcs, err := c.GetPackageBundleControllers(cmd.Context(), o.global.Kubeconfig)
	if err != nil {
		return err
	}
	if o.Output != "" {
		list := &packagesv1.PackageBundleControllerList{Items: pbcs}
		list.APIVersion, list.Kind = packagesv1.GroupVersion.String(), "PackageBundleControllerList"
		return PrintStructured(o.Out, o.Output, list)
	}
	if len(pbcs) == 0 {
		_, err := fmt.Fprintln(o.ErrOut, "No package bundle controllers: create one with `flotilla install packagecontroller --cluster NAME`.")
		return err
	}
	tw := tabwriter.NewWriter(o.Out, 0, 2, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tKUBERNETES\tACTIVE BUNDLE\tSTATE\tREADY\tDETAIL")
	for _, p := range pbcs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, orDash(p.Status.KubernetesMinor), orDash(p.Spec.ActiveBundle),
			orDash(string(p.Status.State)), packageReady(p.Status.Conditions), orDash(p.Status.Detail))
	}
	return tw.Flush()
}
