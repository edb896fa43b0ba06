package cmd

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// GetPackageBundlesOptions are the options of `flotilla get packagebundles`.
type GetPackageBundlesOptions struct {
	clientOptions
	outputOptions
}

// NewGetPackageBundlesCmd returns `flotilla get packagebundles`.
func NewGetPackageBundlesCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GetPackageBundlesOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:     "packagebundles",
		Aliases: []string{"packagebundle"},
		Short:   "List the package bundles found in the registries, valid or not",
		Example: `  flotilla get packagebundles --kubeconfig mgmt/mgmt.kubeconfig`,
		Args:    cobra.NoArgs,
		RunE:    RunE(o),
	}
	o.addFlag(cmd, OutputWide, OutputJSON, OutputYAML)
	return cmd
}

// Run lists the bundles.
func (o *GetPackageBundlesOptions) Run(ctx context.Context) error {
	bundles, err := o.client.GetPackageBundles(ctx, o.global.Kubeconfig)
	if err != nil {
		return err
	}
	return packageBundlesOutput(bundles, time.Now()).print(o.IOStreams, o.Output)
}

// packageBundlesOutput is the output of get packagebundles.
func packageBundlesOutput(bundles []packagesv1.PackageBundle, now time.Time) *listOutput {
	list := &packagesv1.PackageBundleList{Items: bundles}
	list.APIVersion, list.Kind = packagesv1.GroupVersion.String(), "PackageBundleList"
	out := &listOutput{
		object:  list,
		empty:   "No package bundles found yet: see `flotilla get packagebundlecontrollers` for why.",
		columns: []string{"NAME", "KUBERNETES", "BUILD", "PACKAGES", "STATE", "AGE"},
		wide:    []string{"SOURCE", "DETAIL"},
	}
	for _, b := range bundles {
		source := "-"
		if s := b.Spec.Source; s != nil {
			source = s.Registry + "/" + s.Repository
		}
		out.row(b.Name, b.Spec.KubernetesMinor, strconv.Itoa(b.Spec.Build), strconv.Itoa(len(b.Spec.Packages)),
			orDash(string(b.Status.State)), age(now, b.CreationTimestamp.Time), source, orDash(b.Status.Detail))
	}
	return out
}
