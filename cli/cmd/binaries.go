package cmd

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// NewBinariesCmd returns `flotilla binaries`, which builds and lists the control plane programs
// local clusters run.
func NewBinariesCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	cmd := newGroupCmd("binaries", "Build and list the control plane programs local clusters run")
	cmd.Long = `Local clusters run kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok as
processes, built from source once per machine and Kubernetes version into the binary cache
(--bin-dir, $` + binaries.RootEnv + `, default ~/.cache/flotilla/bin), one directory per version.
Building needs Go and the Go module proxy, nothing else: the flotilla binary carries the Go
modules the programs are built from. With --nodes, the same builds make the programs of real nodes
(kubelet, kube-proxy, containerd, CNI plugins) and of the images they pull (pause, CoreDNS,
hello-flotilla: see flotilla image build).`
	cmd.AddCommand(NewBinariesBuildCmd(streams, global), NewBinariesListCmd(streams, global))
	return cmd
}

// BinariesBuildOptions are the options of `flotilla binaries build`.
type BinariesBuildOptions struct {
	clientOptions
	// Versions to build: minors ("1.35") or full versions ("v1.35.4").
	Versions []string
	// All builds every supported version.
	All bool
	// Nodes builds the programs of real nodes and of Flotilla's images too.
	Nodes bool
}

// NewBinariesBuildCmd returns `flotilla binaries build`.
func NewBinariesBuildCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &BinariesBuildOptions{clientOptions: newClientOptions(streams, global, streams.Out)}
	cmd := &cobra.Command{
		Use:   "build VERSION... | --all",
		Short: "Build the control plane programs of Kubernetes versions into the binary cache",
		Long: `Build kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok for each VERSION (a
minor such as 1.35, or a supported version such as v1.35.4) into <bin-dir>/<version>/, with go
build through the Go module proxy. Programs already in the cache are kept, so running it again
is cheap. Kubernetes takes about 10 minutes on 2 cores, once per machine and version; progress
is printed as it goes. --nodes adds kubelet and kube-proxy of the version, containerd
` + "v2 with its runc shim, the CNI plugins, and the programs of Flotilla's images" + `. Supported:
` + strings.Join(binaries.SupportedMinors(), ", ") + `.`,
		Example: `  flotilla binaries build 1.35
  flotilla binaries build 1.36 --nodes
  flotilla binaries build --all
  flotilla binaries build v1.36.3 --bin-dir /var/cache/flotilla`,
		RunE: RunE(o),
	}
	cmd.Flags().BoolVar(&o.All, "all", false, "build every supported version")
	cmd.Flags().BoolVar(&o.Nodes, "nodes", false, "also build the programs of real nodes (kubelet, kube-proxy, containerd, CNI plugins) and of Flotilla's images (pause, CoreDNS, hello-flotilla)")
	return cmd
}

// Complete takes the versions from the arguments and builds the client.
func (o *BinariesBuildOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Versions = args
	return o.clientOptions.Complete(cmd, args)
}

// Validate checks that supported versions are given, or --all.
func (o *BinariesBuildOptions) Validate() error {
	switch {
	case o.All && len(o.Versions) > 0:
		return fmt.Errorf("give versions or --all, not both")
	case !o.All && len(o.Versions) == 0:
		return fmt.Errorf("name the Kubernetes versions to build (%s), or --all", strings.Join(binaries.SupportedMinors(), ", "))
	}
	for _, v := range o.Versions {
		if _, err := binaries.ResolveMinor(v); err != nil {
			return err
		}
	}
	return nil
}

// Run builds each version in turn (every supported one for --all).
func (o *BinariesBuildOptions) Run(ctx context.Context) error {
	sets, err := o.client.BuildBinaries(ctx, o.Nodes, o.Versions...)
	for _, set := range sets {
		fmt.Fprintf(o.Out, "Kubernetes %s is ready in %s\n", set.Version, set.Dir)
	}
	return err
}

// BinariesListOptions are the options of `flotilla binaries list`.
type BinariesListOptions struct {
	clientOptions
	// outputOptions hold -o: "" for a table, json or yaml.
	outputOptions
}

// NewBinariesListCmd returns `flotilla binaries list`.
func NewBinariesListCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &BinariesListOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the supported Kubernetes versions and whether their programs are built",
		Example: `  flotilla binaries list
  flotilla binaries list -o json`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	o.addFlag(cmd, OutputJSON, OutputYAML)
	return cmd
}

// Run prints one row per supported version.
func (o *BinariesListOptions) Run(context.Context) error {
	list := o.client.ListBinaries()
	out := &listOutput{object: list, columns: []string{"VERSION", "MINOR", "STATUS", "NODES", "DIRECTORY"}}
	for _, st := range list {
		status := "built"
		if !st.Ready {
			status = "missing " + strings.Join(st.Missing, ", ") + "; run: " + st.BuildCommand
		}
		nodes := "built"
		if !st.NodesReady {
			nodes = "not built (--nodes)"
		}
		out.row(st.Version, st.Minor, status, nodes, st.Dir)
	}
	return out.print(o.IOStreams, o.Output)
}
