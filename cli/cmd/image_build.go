package cmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
)

// NewImageCmd returns `flotilla image`, the images real nodes pull.
func NewImageCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	cmd := newGroupCmd("image", "Build the OCI images real nodes pull, without Docker")
	cmd.AddCommand(NewImageBuildCmd(streams, global))
	return cmd
}

// ImageBuildOptions are the options of `flotilla image build`.
type ImageBuildOptions struct {
	clientOptions

	remote registryRemote
	Images []string
}

// NewImageBuildCmd returns `flotilla image build`.
func NewImageBuildCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &ImageBuildOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	names := make([]string, 0, len(ociimage.Flotilla))
	for _, img := range ociimage.Flotilla {
		names = append(names, img.Program+" ("+img.Name+")")
	}
	cmd := &cobra.Command{
		Use:   "build [IMAGE...]",
		Short: "Build Flotilla's images from the binary cache and push them to the mirror registry",
		Long: `Build the images real nodes pull, each a static program of the binary cache (flotilla binaries
build VERSION --nodes) over a minimal base layer with Debian's CA certificates, and push each to
the registry under its upstream name: registry.k8s.io/pause:3.10 goes to
<registry>/registry.k8s.io/pause:3.10, where the containerd of every real node looks for it.
Without arguments every image is built: ` + strings.Join(names, ", ") + `.
Building again gives the same digests, so nothing new is pushed. The digests are recorded in
$FLOTILLA_HOME/registry/images.json: real nodes pull the sandbox's pause and CoreDNS by them
(name@sha256:...), so an image pushed under the same tag later is not pulled. Pushes to the
embedded registry use its push credential.`,
		Example: `  # Into the embedded registry (flotilla registry start)
  flotilla image build

  flotilla image build pause coredns -o json`,
		RunE: RunE(o),
	}
	o.remote.addRegistry(cmd)
	return cmd
}

// Complete takes the images, completes the connection flags and builds the client.
func (o *ImageBuildOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Images = args
	if err := o.remote.complete(cmd); err != nil {
		return err
	}
	return o.clientOptions.Complete(cmd, args)
}

// Validate checks -o.
func (o *ImageBuildOptions) Validate() error { return o.remote.Validate() }

// Run builds and pushes.
func (o *ImageBuildOptions) Run(ctx context.Context) error {
	conn, err := client.RegistryConnection(ctx, o.remote.RegistryConnectionOptions)
	if err != nil {
		return err
	}
	built, err := o.client.BuildImages(ctx, client.BuildImagesOptions{Registry: o.remote.Registry, Images: o.Images, Connection: conn})
	if err != nil {
		return o.remote.explain(err)
	}
	if o.remote.Output != "" {
		return PrintStructured(o.Out, o.remote.Output, built)
	}
	tw := tabwriter.NewWriter(o.Out, 0, 2, 3, ' ', 0)
	fmt.Fprintln(tw, "IMAGE\tMIRRORED AS\tDIGEST")
	for _, b := range built {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Name, b.Reference, b.Digest)
	}
	return tw.Flush()
}
