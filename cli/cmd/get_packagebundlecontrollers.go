package cmd

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// GetPackageBundleControllersOptions are the options of `flotilla get packagebundlecontrollers`.
type GetPackageBundleControllersOptions struct {
	clientOptions
	outputOptions
}

// NewGetPackageBundleControllersCmd returns `flotilla get packagebundlecontrollers`.
func NewGetPackageBundleControllersCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GetPackageBundleControllersOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:     "packagebundlecontrollers",
		Aliases: []string{"packagebundlecontroller", "pbc"},
		Short:   "List each cluster's package bundle controller: source, active bundle, state",
		Example: `  flotilla get packagebundlecontrollers --kubeconfig mgmt/mgmt.kubeconfig`,
		Args:    cobra.NoArgs,
		RunE:    RunE(o),
	}
	o.addFlag(cmd, OutputJSON, OutputYAML)
	return cmd
}

// Run lists the PBCs.
func (o *GetPackageBundleControllersOptions) Run(ctx context.Context) error {
	pbcs, err := o.client.GetPackageBundleControllers(ctx, o.global.Kubeconfig)
	if err != nil {
		return err
	}
	return packageBundleControllersOutput(pbcs).print(o.IOStreams, o.Output)
}

// packageBundleControllersOutput is the output of get packagebundlecontrollers.
func packageBundleControllersOutput(pbcs []packagesv1.PackageBundleController) *listOutput {
	list := &packagesv1.PackageBundleControllerList{Items: pbcs}
	list.APIVersion, list.Kind = packagesv1.GroupVersion.String(), "PackageBundleControllerList"
	out := &listOutput{
		object:  list,
		empty:   "No package bundle controllers: create one with `flotilla install packagecontroller --cluster NAME`.",
		columns: []string{"NAME", "KUBERNETES", "ACTIVE BUNDLE", "STATE", "READY", "DETAIL"},
	}
	for _, p := range pbcs {
		out.row(p.Name, orDash(p.Status.KubernetesMinor), orDash(p.Spec.ActiveBundle),
			orDash(string(p.Status.State)), packageReady(p.Status.Conditions), orDash(p.Status.Detail))
	}
	return out
}
