package cmd

import (
	"context"
	"errors"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// clusterFileOptions are the options of the commands that act on a cluster spec file (create
// and upgrade cluster): their progress is their output.
type clusterFileOptions struct {
	clientOptions
	// File is the cluster spec.
	File string
	// OutDir holds NAME/: the kubeconfig create writes, the checkpoint of an interrupted run.
	OutDir string
	// fileHint says what -f should be when it is missing.
	fileHint string
}

func newClusterFileOptions(streams genericiooptions.IOStreams, global *GlobalOptions, fileHint string) clusterFileOptions {
	return clusterFileOptions{clientOptions: newClientOptions(streams, global, streams.Out), OutDir: ".", fileHint: fileHint}
}

// addFlags registers -f and --output-dir, described by outDirUsage.
func (o *clusterFileOptions) addFlags(cmd *cobra.Command, outDirUsage string) {
	cmd.Flags().StringVarP(&o.File, "filename", "f", "", "cluster spec file")
	cmd.Flags().StringVar(&o.OutDir, "output-dir", o.OutDir, outDirUsage)
}

// Validate checks that a spec file is given.
func (o *clusterFileOptions) Validate() error {
	if o.File == "" {
		return errors.New("-f FILE is required: " + o.fileHint)
	}
	return nil
}

// clusterRefOptions are the options of the commands that name a cluster (describe, get
// kubeconfig, delete): its NAME argument and its namespace in the management cluster.
type clusterRefOptions struct {
	clientOptions
	// Name of the cluster; Namespace of it in the management cluster.
	Name, Namespace string
}

// newClusterRefOptions returns the options of a command whose progress goes to progress.
func newClusterRefOptions(streams genericiooptions.IOStreams, global *GlobalOptions, progress io.Writer) clusterRefOptions {
	return clusterRefOptions{clientOptions: newClientOptions(streams, global, progress), Namespace: "default"}
}

// addNamespaceFlag registers -n, described by usage.
func (o *clusterRefOptions) addNamespaceFlag(cmd *cobra.Command, usage string) {
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", o.Namespace, usage)
}

// Complete takes the name from the arguments and builds the client.
func (o *clusterRefOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Name = args[0]
	return o.clientOptions.Complete(cmd, args)
}

// managementCluster connects, for reading, to the management cluster of --kubeconfig, else to
// the local management cluster NAME.
func (o *clusterRefOptions) managementCluster(ctx context.Context) (ctrlclient.Client, error) {
	return o.client.ReadManagementCluster(ctx, o.global.Kubeconfig, o.Name)
}
