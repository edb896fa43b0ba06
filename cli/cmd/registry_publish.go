package cmd

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// RegistryPublishOptions are the options of `flotilla registry publish`.
type RegistryPublishOptions struct {
	clientOptions

	remote           registryRemote
	ChartsDir        string
	KubernetesMinors []string
	SigningKey       string
	ImageRegistry    string
	SkipImages       bool
}

// NewRegistryPublishCmd returns `flotilla registry publish`.
func NewRegistryPublishCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryPublishOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "publish",
		Short: "Push Helm charts and a signed package bundle per Kubernetes minor to an OCI registry",
		Long: `Package every chart of --charts (default: the curated catalog built into flotilla: hello-flotilla,
flotilla-greeter, hello-stack), push each as an OCI Helm chart to
<registry>/<repository>/<chart>:<version>, and push, for each --kubernetes-minor, a bundle that
lists every chart with its digest, config schema and dependencies, signed with ECDSA P-256, to
<registry>/<repository>:v<major>-<minor>-<build>.

The build is one more than the newest bundle of that minor in the registry; when that bundle
already lists the same charts, nothing new is pushed. Charts are packaged reproducibly, so
publishing the same charts again changes nothing.

Each bundle also records, signed, the images its charts run (with their default values, in a
cluster of its minor) and those every real node runs, pinned by their digests in
--image-registry (default: --registry; the mirror layout 'flotilla image build' pushes to):
'flotilla packages export' and 'import' carry these images only, with these digests. Every image
must be there, unless --skip-images.

The signing key is $FLOTILLA_HOME/registry/signing-key.pem, generated on first use, or
--signing-key. Its public key is written next to it (signing-key.pub.pem): give that file to
'flotilla install packagecontroller --public-key' so clusters trust the bundles.`,
		Example: `  # The curated catalog into the embedded registry (flotilla registry start)
  flotilla registry publish

  # Your own charts into a registry you run, with your key
  flotilla registry publish --charts ./my-charts --registry ghcr.io --repository my-org/packages \
    --username me --password "$GHCR_TOKEN" --signing-key ./bundle-key.pem --kubernetes-minor 1.36

  # Into the embedded registry serving TLS and users, with what 'helm registry login' stored
  flotilla registry publish --registry registry.example.com:5001 --ca-file ca.crt`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	o.remote.add(cmd)
	f := cmd.Flags()
	f.StringVar(&o.ChartsDir, "charts", "", "directory with one chart per subdirectory (default: the curated catalog built into flotilla)")
	f.StringSliceVar(&o.KubernetesMinors, "kubernetes-minor", []string{"1.35", "1.36"}, "Kubernetes minors to build a bundle for (repeat or comma separate)")
	f.StringVar(&o.ImageRegistry, "image-registry", "", "registry holding the images the charts and real nodes run, in the mirror layout of 'flotilla image build' (host[:port][/prefix]; default --registry)")
	f.BoolVar(&o.SkipImages, "skip-images", false, "record no images in the bundles ('flotilla packages export' then carries none)")
	f.StringVar(&o.SigningKey, "signing-key", "", "PEM ECDSA P-256 private key that signs the bundles (default $FLOTILLA_HOME/registry/signing-key.pem, generated when missing)")
	return cmd
}

// Complete completes the connection flags, makes the paths absolute and builds the client.
func (o *RegistryPublishOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.remote.complete(cmd, &o.ChartsDir, &o.SigningKey); err != nil {
		return err
	}
	return o.clientOptions.Complete(cmd, args)
}

// Validate checks -o and the image flags.
func (o *RegistryPublishOptions) Validate() error {
	if o.SkipImages && o.ImageRegistry != "" {
		return errors.New("--skip-images records no images: drop --image-registry, or --skip-images")
	}
	return o.remote.Validate()
}

// Run publishes.
func (o *RegistryPublishOptions) Run(ctx context.Context) error {
	conn, err := client.RegistryConnection(ctx, o.remote.RegistryConnectionOptions)
	if err != nil {
		return err
	}
	imageRegistry := cmp.Or(o.ImageRegistry, o.remote.Registry)
	if o.SkipImages {
		imageRegistry = ""
	}
	res, err := o.client.Publish(ctx, client.PublishOptions{
		Registry:         o.remote.Registry,
		Repository:       o.remote.Repository,
		ChartsDir:        o.ChartsDir,
		KubernetesMinors: o.KubernetesMinors,
		SigningKey:       o.SigningKey,
		Connection:       conn,
		ImageRegistry:    imageRegistry,
	})
	if err != nil {
		return o.remote.explain(err)
	}
	if o.remote.Output != "" {
		return PrintStructured(o.Out, o.remote.Output, res)
	}
	if res.KeyCreated {
		_, _ = fmt.Fprintf(o.ErrOut, "Generated the signing key %s\n", o.client.DefaultSigningKeyPath())
	}
	tw := tabwriter.NewWriter(o.Out, 0, 2, 3, ' ', 0)
	fmt.Fprintln(tw, "CHART\tVERSION\tDIGEST\tREFERENCE")
	for _, ch := range res.Charts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", ch.Name, ch.Version, ch.Digest, ch.Ref)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "BUNDLE\tKUBERNETES\tPACKAGES\tDIGEST\tPUSHED")
	for _, b := range res.Bundles {
		pushed := "yes"
		if b.Unchanged {
			pushed = "no (unchanged)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", b.Ref, b.KubernetesMinor, b.Packages, b.Digest, pushed)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "\nBundles verify with the public key %s\n", res.PublicKey)
	return err
}
