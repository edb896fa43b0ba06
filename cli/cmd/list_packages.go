package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// ListPackagesOptions are the options of `flotilla list packages`.
type ListPackagesOptions struct {
	clientOptions
	outputOptions
	// Cluster is the cluster whose packages to list; KubeVersion, when set, the Kubernetes
	// minor whose newest bundle to list instead of the cluster's active one.
	Cluster, KubeVersion string
}

// NewListPackagesCmd returns `flotilla list packages`.
func NewListPackagesCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &ListPackagesOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "packages --cluster NAME",
		Short: "List the curated packages a cluster can install",
		Long: `List the packages of the cluster's active bundle, with their versions (the default first).
With --kube-version, list those of the newest valid bundle for that Kubernetes minor instead.`,
		Example: `  flotilla list packages --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig
  flotilla list packages --cluster w1 --kube-version 1.36 --kubeconfig mgmt/mgmt.kubeconfig -o yaml`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	addPackagesClusterFlag(cmd, &o.Cluster, "the cluster whose packages to list")
	cmd.Flags().StringVar(&o.KubeVersion, "kube-version", "", "list the newest bundle for this Kubernetes minor (e.g. 1.36) instead of the active one")
	o.addFlag(cmd, OutputJSON, OutputYAML)
	return cmd
}

// Run lists the packages.
func (o *ListPackagesOptions) Run(ctx context.Context) error {
	b, err := o.client.ListPackages(ctx, o.global.Kubeconfig, o.Cluster, o.KubeVersion)
	if err != nil {
		return err
	}
	if o.Output == "" {
		_, _ = fmt.Fprintf(o.ErrOut, "Bundle %s (Kubernetes %s, build %d)\n", b.Name, b.Spec.KubernetesMinor, b.Spec.Build)
	}
	return bundlePackagesOutput(b).print(o.IOStreams, o.Output)
}

// bundlePackagesOutput is the output of list packages: the packages of bundle b.
func bundlePackagesOutput(b *packagesv1.PackageBundle) *listOutput {
	out := &listOutput{object: b.Spec.Packages, columns: []string{"PACKAGE", "VERSIONS", "DEPENDENCIES", "DESCRIPTION"}}
	for _, p := range b.Spec.Packages {
		var versions []string
		for _, v := range p.Versions {
			versions = append(versions, v.Version)
		}
		deps := "-"
		if v := p.Version(""); v != nil && len(v.Dependencies) > 0 {
			deps = strings.Join(v.Dependencies, ",")
		}
		out.row(p.Name, strings.Join(versions, ","), deps, orDash(p.Description))
	}
	return out
}
