package cmd

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// RegistryListOptions are the options of `flotilla registry list`.
type RegistryListOptions struct {
	clientOptions

	remote          registryRemote
	KubernetesMinor []string
	PublicKey       string
}

// NewRegistryListCmd returns `flotilla registry list`.
func NewRegistryListCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryListOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the bundles in a registry and verify their signatures",
		Long: `List the bundles of each --kubernetes-minor in <registry>/<repository>, oldest first, with the
packages each lists, and check each signature with --public-key (default: the public key of
the default signing key, $FLOTILLA_HOME/registry/signing-key.pub.pem).`,
		Example: `  flotilla registry list
  flotilla registry list --registry ghcr.io --repository my-org/packages --public-key bundle-key.pub.pem -o yaml`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	o.remote.add(cmd)
	cmd.Flags().StringSliceVar(&o.KubernetesMinor, "kubernetes-minor", []string{"1.35", "1.36"}, "Kubernetes minors whose bundles to list")
	cmd.Flags().StringVar(&o.PublicKey, "public-key", "", "PEM public key that verifies the bundles (default $FLOTILLA_HOME/registry/signing-key.pub.pem)")
	return cmd
}

// Complete completes the connection flags, makes the key's path absolute and builds the client.
func (o *RegistryListOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.remote.complete(cmd, &o.PublicKey); err != nil {
		return err
	}
	return o.clientOptions.Complete(cmd, args)
}

// Validate checks -o.
func (o *RegistryListOptions) Validate() error { return o.remote.Validate() }

// Run lists and verifies.
func (o *RegistryListOptions) Run(ctx context.Context) error {
	conn, err := client.RegistryConnection(ctx, o.remote.RegistryConnectionOptions)
	if err != nil {
		return err
	}
	listing, err := o.client.ListBundles(ctx, client.ListBundlesOptions{
		Registry: o.remote.Registry, Repository: o.remote.Repository,
		KubernetesMinors: o.KubernetesMinor, PublicKey: o.PublicKey, Connection: conn,
	})
	if err != nil {
		return err
	}
	if o.remote.Output != "" {
		return PrintStructured(o.Out, o.remote.Output, listing)
	}
	if len(listing) == 0 {
		_, err := fmt.Fprintf(o.ErrOut, "No bundles in %s/%s. Publish some with 'flotilla registry publish'.\n", o.remote.Registry, o.remote.Repository)
		return err
	}
	tw := tabwriter.NewWriter(o.Out, 0, 2, 3, ' ', 0)
	fmt.Fprintln(tw, "BUNDLE\tKUBERNETES\tSIGNATURE\tDIGEST\tPACKAGES")
	for _, l := range listing {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Name, l.KubernetesMinor, l.Verified, orDash(l.Digest), strings.Join(l.Packages, ","))
	}
	return tw.Flush()
}
