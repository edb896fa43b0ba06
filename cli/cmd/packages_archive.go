package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/packages/bundle/archive"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// NewPackagesCmd returns `flotilla packages`: carrying curated packages into air-gapped networks.
func NewPackagesCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	cmd := newGroupCmd("packages", "Carry package bundles, their charts and images into networks without access to their registry")
	cmd.Long = `An air-gapped install in three separate steps: 'flotilla packages export' pulls the newest
signed bundle of each Kubernetes minor, every chart it names and the images those charts and
real nodes run into one archive file, with access to the registry only (no cluster); you carry
the file; 'flotilla packages import' pushes it
into a registry the management cluster reaches, which then serves as its registry mirror
(ConfigMap flotilla-system/registry-mirror). See docs/packages-registry.md.`
	cmd.AddCommand(NewPackagesExportCmd(streams, global), NewPackagesImportCmd(streams, global))
	return cmd
}

// PackagesExportOptions are the options of `flotilla packages export`.
type PackagesExportOptions struct {
	clientOptions

	remote             registryRemote
	KubernetesVersions []string
	ImageRegistry      string
	SkipImages         bool
	Path               string
}

// NewPackagesExportCmd returns `flotilla packages export`.
func NewPackagesExportCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &PackagesExportOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the newest signed bundle, every chart it names and their images into one archive",
		Long: `Pull the newest bundle of each --kubernetes-version from <registry>/<repository>, every chart
version it names (by the digest the bundle pins) and the images they run, and write them,
unchanged, into one tar file holding an OCI image layout. Each artifact keeps the repository
path and tag it had, so that 'flotilla packages import' can lay them out in another registry as
a mirror of this one.

The images are those the Pod templates and hooks of each chart name when it is rendered with
its default values for a cluster of the bundle's Kubernetes minor, and those every real node
pulls (the Pod sandbox's pause and CoreDNS). Each is read, with all its platforms, from its
mirror path in --image-registry (<image-registry>/<upstream host>/<path>, where 'flotilla image
build' pushes Flotilla's own and where real nodes pull from), and lands at the same path.`,
		Example: `  # The catalog of the embedded registry (flotilla registry start; flotilla registry publish)
  flotilla packages export --kubernetes-version 1.36 -o flotilla-packages.tar`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.remote.Registry, "registry", client.DefaultRegistryAddress, "the bundles' registry host[:port]")
	fs.StringVar(&o.remote.Repository, "repository", client.DefaultRegistryRepository, "the bundles' repository in the registry")
	o.remote.addConnection(fs)
	fs.StringSliceVar(&o.KubernetesVersions, "kubernetes-version", []string{"1.35", "1.36"}, "Kubernetes versions whose newest bundle to export (repeat or comma separate)")
	fs.StringVar(&o.ImageRegistry, "image-registry", "", "the registry holding the images at their mirror paths, host[:port] with an optional path prefix, reached with the same connection flags (default: --registry)")
	fs.BoolVar(&o.SkipImages, "skip-images", false, "export the bundles and charts only, without the images they run")
	fs.StringVarP(&o.Path, "output", "o", "", "archive file to write")
	return cmd
}

// Complete completes the connection flags, makes the archive's path absolute and builds the
// client.
func (o *PackagesExportOptions) Complete(cmd *cobra.Command, args []string) error {
	if err := o.remote.complete(cmd, &o.Path); err != nil {
		return err
	}
	return o.clientOptions.Complete(cmd, args)
}

// Validate checks that -o names the archive, and --image-registry.
func (o *PackagesExportOptions) Validate() error {
	if o.Path == "" {
		return errors.New("-o: name the archive file to write, such as -o flotilla-packages.tar")
	}
	if o.ImageRegistry != "" {
		if _, _, err := registryconn.SplitRegistry(o.ImageRegistry); err != nil {
			return fmt.Errorf("--image-registry: %w", err)
		}
	}
	return nil
}

// Run exports.
func (o *PackagesExportOptions) Run(ctx context.Context) error {
	conn, err := client.RegistryConnection(ctx, o.remote.RegistryConnectionOptions)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := o.client.ExportPackages(ctx, client.ExportPackagesOptions{
		Registry:           o.remote.Registry,
		Repository:         o.remote.Repository,
		KubernetesVersions: o.KubernetesVersions,
		Connection:         conn,
		ImageRegistry:      o.ImageRegistry,
		SkipImages:         o.SkipImages,
		Path:               o.Path,
	})
	if err != nil {
		return err
	}
	if err := printArtifacts(o.Out, res); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "\nWrote %d artifacts to %s in %s\n", len(res), o.Path, time.Since(start).Round(time.Millisecond))
	return err
}

// PackagesImportOptions are the options of `flotilla packages import`.
type PackagesImportOptions struct {
	clientOptions

	remote    registryRemote
	Path      string
	PublicKey string
}

// NewPackagesImportCmd returns `flotilla packages import`.
func NewPackagesImportCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &PackagesImportOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "import FILE --registry HOST[:PORT][/PREFIX]",
		Short: "Push an archive of 'flotilla packages export' into a registry that serves as a mirror",
		Long: `Push every bundle, chart and image of FILE into --registry, below its optional path prefix,
at the repository path and tag each had in its original registry, unchanged (digests and
signatures hold). First every bundle must verify with --public-key, and every chart and image
must be one a bundle names, in the repository, at the tag and with the digest it names: an
archive that names any other repository, or another digest, pushes nothing. Then make that
registry the management cluster's mirror:

  kubectl -n flotilla-system create configmap registry-mirror --from-literal=registry=HOST[:PORT][/PREFIX]`,
		Example: `  # Into the embedded registry of this machine, with its push credential
  flotilla registry start
  flotilla packages import flotilla-packages.tar --registry 127.0.0.1:5001 --public-key signing-key.pub.pem`,
		Args: exactlyOneArg("the archive file"),
		RunE: RunE(o),
	}
	fs := cmd.Flags()
	fs.StringVar(&o.remote.Registry, "registry", "", "the mirror: host[:port] with an optional path prefix, such as 127.0.0.1:5002 or mirror.example.com/flotilla")
	_ = cmd.MarkFlagRequired("registry")
	fs.StringVar(&o.PublicKey, "public-key", "", "PEM public key the archive's bundles are signed for (default $FLOTILLA_HOME/registry/signing-key.pub.pem)")
	o.remote.addConnection(fs)
	return cmd
}

// Complete takes the archive from the arguments, completes the connection flags, makes the
// paths absolute and builds the client.
func (o *PackagesImportOptions) Complete(cmd *cobra.Command, args []string) error {
	o.Path = args[0]
	if err := o.remote.complete(cmd, &o.Path, &o.PublicKey); err != nil {
		return err
	}
	return o.clientOptions.Complete(cmd, args)
}

// Validate checks --registry.
func (o *PackagesImportOptions) Validate() error {
	if _, _, err := registryconn.SplitRegistry(o.remote.Registry); err != nil {
		return fmt.Errorf("--registry: %w", err)
	}
	return nil
}

// Run imports.
func (o *PackagesImportOptions) Run(ctx context.Context) error {
	host, _, _ := registryconn.SplitRegistry(o.remote.Registry) // checked by Validate
	connOpts := o.remote.RegistryConnectionOptions
	connOpts.Registry = host
	conn, err := client.RegistryConnection(ctx, connOpts)
	if err != nil {
		return err
	}
	pub, err := o.client.PublicKey(o.PublicKey)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := o.client.ImportPackages(ctx, archive.ImportOptions{Path: o.Path, Registry: o.remote.Registry, Connection: conn, PublicKey: pub})
	if err != nil {
		return err
	}
	if err := printArtifacts(o.Out, res); err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "\nPushed %d artifacts to %s in %s\n", len(res), o.remote.Registry, time.Since(start).Round(time.Millisecond))
	return err
}

// printArtifacts prints a table of artifacts.
func printArtifacts(w io.Writer, artifacts []archive.Artifact) error {
	tw := tabwriter.NewWriter(w, 0, 2, 3, ' ', 0)
	fmt.Fprintln(tw, "KIND\tREPOSITORY\tTAG\tDIGEST")
	for _, a := range artifacts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Kind, a.Repository, a.Tag, a.Digest)
	}
	return tw.Flush()
}
