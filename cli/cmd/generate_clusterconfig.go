package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// GenerateClusterConfigOptions are the options of `flotilla generate clusterconfig`: the name
// (the argument) and spec.Generate's inputs, each a flag.
type GenerateClusterConfigOptions struct {
	genericiooptions.IOStreams
	spec.GenerateOptions
}

// NewGenerateClusterConfigCmd returns `flotilla generate clusterconfig`.
func NewGenerateClusterConfigCmd(streams genericiooptions.IOStreams) *cobra.Command {
	o := &GenerateClusterConfigOptions{IOStreams: streams, GenerateOptions: spec.GenerateOptions{Provider: spec.ProviderLocal, Workers: 2}}
	cmd := &cobra.Command{
		Use:   "clusterconfig NAME",
		Short: "Print a complete, commented cluster spec to edit and create",
		Long: `Print a cluster spec: the Flotilla Cluster and its provider's datacenter and machine configs,
as multi-document YAML with a comment on every field.

The spec says management: false, a workload cluster, unless --management is given.
'flotilla create cluster -f FILE --kubeconfig MGMT.kubeconfig' creates a workload cluster managed
by the management cluster MGMT; without --kubeconfig, 'flotilla create cluster' creates a
management cluster (one that manages itself), which needs management: true in the spec.`,
		Example: `  # A management cluster
  flotilla generate clusterconfig mgmt --provider local --management > mgmt.yaml
  flotilla create cluster -f mgmt.yaml

  # A workload cluster with 5 workers, managed by mgmt
  flotilla generate clusterconfig w1 --provider local --workers 5 > w1.yaml

  # One simulated worker and one real node, whose Pods run
  flotilla generate clusterconfig w1 --provider local --workers 1 --real-workers 1 > w1.yaml
  flotilla create cluster -f w1.yaml --kubeconfig mgmt/mgmt.kubeconfig`,
		Args: exactlyOneArg("NAME"),
		RunE: RunE(o),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Provider, "provider", o.Provider, "infrastructure provider, one of: "+strings.Join(spec.Providers(), ", "))
	fs.BoolVar(&o.Management, "management", o.Management, "write spec.management: true, for a management cluster")
	fs.StringVar(&o.KubernetesVersion, "kubernetes-version", o.KubernetesVersion,
		"Kubernetes minor version, one of: "+strings.Join(binaries.SupportedMinors(), ", ")+" (default: the newest)")
	fs.Int32Var(&o.Workers, "workers", o.Workers, "number of worker nodes")
	fs.Int32Var(&o.RealWorkers, "real-workers", 0, "number of real worker nodes, in a group of their own (local provider; they run as root)")
	_ = cmd.RegisterFlagCompletionFunc("provider", cobra.FixedCompletions(spec.Providers(), cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("kubernetes-version", cobra.FixedCompletions(binaries.SupportedMinors(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Complete takes the name from the arguments.
func (o *GenerateClusterConfigOptions) Complete(_ *cobra.Command, args []string) error {
	o.Name = args[0]
	return nil
}

// Validate checks the flags that spec.Generate does not explain in terms of flags.
func (o *GenerateClusterConfigOptions) Validate() error {
	if o.Workers < 0 {
		return fmt.Errorf("--workers %d is negative; use 0 or more", o.Workers)
	}
	if o.RealWorkers < 0 {
		return fmt.Errorf("--real-workers %d is negative; use 0 or more", o.RealWorkers)
	}
	return nil
}

// Run prints the spec.
func (o *GenerateClusterConfigOptions) Run(context.Context) error {
	out, err := spec.Generate(o.GenerateOptions)
	if err != nil {
		return err
	}
	_, err = o.Out.Write(out)
	return err
}
