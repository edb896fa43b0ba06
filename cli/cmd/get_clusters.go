package cmd

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
)

// GetClustersOptions are the options of `flotilla get clusters`.
type GetClustersOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
	// Output is "", wide, json or yaml.
	Output string
}

// NewGetClustersCmd returns `flotilla get clusters`.
func NewGetClustersCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GetClustersOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster"},
		Short:   "List management and workload clusters",
		Long: `List the clusters of the management cluster given with --kubeconfig, in every namespace.
Without --kubeconfig, list those of every management cluster running on this machine.`,
		Example: `  flotilla get clusters
  flotilla get clusters --kubeconfig mgmt/mgmt.kubeconfig -o yaml`,
		Args: cobra.NoArgs,
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

// Run lists the clusters.
func (o *GetClustersOptions) Run(cmd *cobra.Command) error {
	c, err := client.New(o.global.Home, o.global.BinDir, o.ErrOut)
	if err != nil {
		return err
	}
	clusters, err := c.GetClusters(cmd.Context(), o.global.Kubeconfig)
	if err != nil {
		return err
	}
	if o.Output == OutputJSON || o.Output == OutputYAML {
		list := &flotillav1.ClusterList{Items: clusters}
		list.APIVersion, list.Kind = flotillav1.GroupVersion.String(), "ClusterList"
		return PrintStructured(o.Out, o.Output, list)
	}
	if len(clusters) == 0 {
		_, err := fmt.Fprintln(o.ErrOut, "No clusters found. Create one with `flotilla create cluster -f FILE`.")
		return err
	}
	tw := tabwriter.NewWriter(o.Out, 0, 2, 3, ' ', 0)
	header := "NAMESPACE\tNAME\tTYPE\tMANAGED BY\tVERSION\tWORKERS\tPHASE\tAGE"
	if o.Output == OutputWide {
		header += "\tENDPOINT\tDATACENTER"
	}
	fmt.Fprintln(tw, header)
	for _, cl := range clusters {
		kind := "workload"
		if cl.Spec.Management {
			kind = "management"
		}
		version := cl.Status.KubernetesVersion
		if version == "" {
			version = cl.Spec.KubernetesVersion
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s", cl.Namespace, cl.Name, kind, cl.Spec.ManagementCluster.Name,
			version, cl.Status.Workers.Ready, cl.Status.Workers.Desired, orDash(cl.Status.Phase),
			duration.HumanDuration(time.Since(cl.CreationTimestamp.Time)))
		if o.Output == OutputWide {
			endpoint := "-"
			if e := cl.Spec.ControlPlane.Endpoint; e != nil {
				endpoint = fmt.Sprintf("%s:%d", e.Host, e.Port)
			}
			row += fmt.Sprintf("\t%s\t%s/%s", endpoint, cl.Spec.DatacenterRef.Kind, cl.Spec.DatacenterRef.Name)
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
