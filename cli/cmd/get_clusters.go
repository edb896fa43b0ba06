package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// GetClustersOptions are the options of `flotilla get clusters`.
type GetClustersOptions struct {
	clientOptions
	outputOptions
}

// NewGetClustersCmd returns `flotilla get clusters`.
func NewGetClustersCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &GetClustersOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster"},
		Short:   "List management and workload clusters",
		Long: `List the clusters of the management cluster given with --kubeconfig, in every namespace.
Without --kubeconfig, list those of every management cluster running on this machine.`,
		Example: `  flotilla get clusters
  flotilla get clusters --kubeconfig mgmt/mgmt.kubeconfig -o yaml`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	o.addFlag(cmd, OutputWide, OutputJSON, OutputYAML)
	return cmd
}

// Run lists the clusters.
func (o *GetClustersOptions) Run(ctx context.Context) error {
	clusters, err := o.client.GetClusters(ctx, o.global.Kubeconfig)
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
