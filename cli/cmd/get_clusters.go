package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
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
	return clustersOutput(clusters, time.Now()).print(o.IOStreams, o.Output)
}

// clustersOutput is the output of get clusters.
func clustersOutput(clusters []flotillav1.Cluster, now time.Time) *listOutput {
	list := &flotillav1.ClusterList{Items: clusters}
	list.APIVersion, list.Kind = flotillav1.GroupVersion.String(), "ClusterList"
	out := &listOutput{
		object:  list,
		empty:   "No clusters found. Create one with `flotilla create cluster -f FILE`.",
		columns: []string{"NAMESPACE", "NAME", "TYPE", "MANAGED BY", "VERSION", "WORKERS", "PHASE", "AGE"},
		wide:    []string{"ENDPOINT", "DATACENTER"},
	}
	for _, cl := range clusters {
		kind := "workload"
		if cl.Spec.Management {
			kind = "management"
		}
		version := cl.Status.KubernetesVersion
		if version == "" {
			version = cl.Spec.KubernetesVersion
		}
		endpoint := "-"
		if e := cl.Spec.ControlPlane.Endpoint; e != nil {
			endpoint = fmt.Sprintf("%s:%d", e.Host, e.Port)
		}
		out.row(cl.Namespace, cl.Name, kind, cl.Spec.ManagementCluster.Name, version,
			fmt.Sprintf("%d/%d", cl.Status.Workers.Ready, cl.Status.Workers.Desired), orDash(cl.Status.Phase), age(now, cl.CreationTimestamp.Time),
			endpoint, cl.Spec.DatacenterRef.Kind+"/"+cl.Spec.DatacenterRef.Name)
	}
	return out
}
