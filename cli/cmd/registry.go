package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// NewRegistryCmd returns `flotilla registry`, the embedded OCI registry and the publishing of
// charts and signed bundles.
func NewRegistryCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	cmd := newGroupCmd("registry", "Run the embedded OCI registry and publish charts and signed package bundles")
	cmd.Long = `An OCI registry for curated packages: Helm charts and the signed bundles that list them.

'flotilla registry start' runs Flotilla's embedded registry in the background (data under
$FLOTILLA_HOME/registry/data, kept across restarts); 'flotilla registry publish' pushes the
curated charts (or your own) and a signed bundle per Kubernetes minor to it, or to any OCI
registry you already run. See docs/packages-registry.md.`
	cmd.AddCommand(
		NewRegistryServeCmd(streams, global),
		NewRegistryStartCmd(streams, global),
		NewRegistryStopCmd(streams, global),
		NewRegistryStatusCmd(streams, global),
		NewRegistryPublishCmd(streams, global),
		NewRegistryListCmd(streams, global),
	)
	return cmd
}

// RegistryServeOptions are the options of `flotilla registry serve`.
type RegistryServeOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	Listen, Dir             string
	TLSCertFile, TLSKeyFile string
	Quiet                   bool
}

// NewRegistryServeCmd returns `flotilla registry serve`.
func NewRegistryServeCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryServeOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the embedded OCI registry in the foreground",
		Long: `Serve an OCI registry (go-containerregistry's, with blobs and manifests kept on disk) until
interrupted. Every request is logged to the error stream unless --quiet.

It has no authentication: keep it on a loopback address, or serve TLS and put it behind
something that authenticates. 'flotilla registry start' runs it in the background instead.`,
		Example: `  flotilla registry serve
  flotilla registry serve --listen 127.0.0.1:5001 --dir /tmp/registry`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Listen, "listen", client.DefaultRegistryAddress, "address to serve on")
	f.StringVar(&o.Dir, "dir", "", "directory for blobs and manifests (default $FLOTILLA_HOME/registry/data)")
	f.StringVar(&o.TLSCertFile, "tls-cert-file", "", "serve HTTPS with this certificate (PEM)")
	f.StringVar(&o.TLSKeyFile, "tls-key-file", "", "private key of --tls-cert-file (PEM)")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "do not log requests")
	return cmd
}

// Complete fills in the default directory.
func (o *RegistryServeOptions) Complete() error {
	if o.Dir == "" {
		c := client.Client{Home: o.global.Home}
		o.Dir = c.DefaultRegistryDataDir()
	}
	dir, err := absPath(o.Dir)
	if err != nil {
		return err
	}
	o.Dir = dir
	return nil
}

// Validate checks the flags.
func (o *RegistryServeOptions) Validate() error {
	if (o.TLSCertFile == "") != (o.TLSKeyFile == "") {
		return fmt.Errorf("--tls-cert-file and --tls-key-file go together")
	}
	if o.Listen == "" {
		return fmt.Errorf("--listen is required, such as %s", client.DefaultRegistryAddress)
	}
	return nil
}

// Run serves until SIGINT or SIGTERM.
func (o *RegistryServeOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := ociregistry.Options{Listen: o.Listen, Dir: o.Dir, TLSCertFile: o.TLSCertFile, TLSKeyFile: o.TLSKeyFile}
	if !o.Quiet {
		opts.Log = o.ErrOut
	}
	scheme := "http"
	if o.TLSCertFile != "" {
		scheme = "https"
	}
	_, _ = fmt.Fprintf(o.ErrOut, "Serving an OCI registry at %s://%s with data in %s\n", scheme, o.Listen, o.Dir)
	return ociregistry.Serve(ctx, opts)
}

// RegistryStartOptions are the options of `flotilla registry start`.
type RegistryStartOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	Listen, Dir string
	Output      string
}

// NewRegistryStartCmd returns `flotilla registry start`.
func NewRegistryStartCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryStartOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run the embedded OCI registry in the background",
		Long: `Run 'flotilla registry serve' as a background process that outlives this command, and wait
until it answers. Its pid file and log are under $FLOTILLA_HOME/registry/{run,logs}.
A registry already running with the same flags is left alone; with other flags it is restarted.`,
		Example: `  flotilla registry start
  flotilla registry start --listen 127.0.0.1:5002 --dir /tmp/registry`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ValidateOutput(o.Output, OutputJSON, OutputYAML); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Listen, "listen", client.DefaultRegistryAddress, "address to serve on")
	cmd.Flags().StringVar(&o.Dir, "dir", "", "directory for blobs and manifests (default $FLOTILLA_HOME/registry/data)")
	AddOutputFlag(cmd, &o.Output, OutputJSON, OutputYAML)
	return cmd
}

// Run starts the registry unless it runs.
func (o *RegistryStartOptions) Run(ctx context.Context) error {
	c, err := client.New(o.global.Home, o.global.BinDir, o.ErrOut)
	if err != nil {
		return err
	}
	dir := o.Dir
	if dir != "" {
		if dir, err = absPath(dir); err != nil {
			return err
		}
	}
	info, err := c.EnsureRegistry(ctx, client.RegistryOptions{Listen: o.Listen, Dir: dir})
	if err != nil {
		return err
	}
	if o.Output != "" {
		return PrintStructured(o.Out, o.Output, info)
	}
	verb := "Started"
	if !info.Started {
		verb = "Already running:"
	}
	_, err = fmt.Fprintf(o.Out, "%s the registry at %s (pid %d, data %s, log %s)\n", verb, info.Address, info.PID, info.Dir, info.Log)
	return err
}

// RegistryStopOptions are the options of `flotilla registry stop`.
type RegistryStopOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
}

// NewRegistryStopCmd returns `flotilla registry stop`.
func NewRegistryStopCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryStopOptions{IOStreams: streams, global: global}
	return &cobra.Command{
		Use:   "stop",
		Short: "Stop the background registry (its data stays)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := client.New(o.global.Home, o.global.BinDir, o.ErrOut)
			if err != nil {
				return err
			}
			_, running := c.RegistryStatus()
			if err := c.StopRegistry(cmd.Context()); err != nil {
				return err
			}
			msg := "The registry was not running."
			if running {
				msg = "Stopped the registry; its data stays in " + c.DefaultRegistryDataDir() + " (or its --dir)."
			}
			_, err = fmt.Fprintln(o.Out, msg)
			return err
		},
	}
}

// RegistryStatusOptions are the options of `flotilla registry status`.
type RegistryStatusOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
	Output string
}

// NewRegistryStatusCmd returns `flotilla registry status`.
func NewRegistryStatusCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryStatusOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say whether the background registry runs, and where",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ValidateOutput(o.Output, OutputJSON, OutputYAML); err != nil {
				return err
			}
			c, err := client.New(o.global.Home, o.global.BinDir, o.ErrOut)
			if err != nil {
				return err
			}
			info, running := c.RegistryStatus()
			if !running {
				return fmt.Errorf("the registry is not running; start it with 'flotilla registry start'")
			}
			if err := client.RegistryReady(cmd.Context(), info.Address); err != nil {
				return fmt.Errorf("the registry runs (pid %d) but does not answer: %w; see %s", info.PID, err, info.Log)
			}
			if o.Output != "" {
				return PrintStructured(o.Out, o.Output, info)
			}
			_, err = fmt.Fprintf(o.Out, "The registry runs at %s (pid %d, data %s, log %s)\n", info.Address, info.PID, info.Dir, info.Log)
			return err
		},
	}
	AddOutputFlag(cmd, &o.Output, OutputJSON, OutputYAML)
	return cmd
}

// registryConnectionFlags are the flags that say how to reach a registry.
type registryConnectionFlags struct {
	Registry              string
	Repository            string
	CAFile                string
	InsecureSkipTLSVerify bool
	PlainHTTP             bool
	Username, Password    string
	plainHTTPSet          bool
}

func (f *registryConnectionFlags) add(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.Registry, "registry", client.DefaultRegistryAddress, "the registry's host[:port]")
	fs.StringVar(&f.Repository, "repository", client.DefaultRegistryRepository, "repository in the registry: charts go to <repository>/<chart>, bundles to <repository>:<bundle>")
	fs.StringVar(&f.CAFile, "ca-file", "", "PEM certificate authorities to trust for the registry's TLS certificate, besides the system's")
	fs.BoolVar(&f.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "do not verify the registry's TLS certificate")
	fs.BoolVar(&f.PlainHTTP, "plain-http", false, "speak plain HTTP to the registry (default: true for loopback registries such as 127.0.0.1:5001, false otherwise)")
	fs.StringVar(&f.Username, "username", "", "registry username (default: Helm's and Docker's stored credentials, as 'helm registry login' and 'docker login' leave them)")
	fs.StringVar(&f.Password, "password", "", "registry password or token (or env FLOTILLA_REGISTRY_PASSWORD)")
}

// connection completes and converts the flags.
func (f *registryConnectionFlags) connection(cmd *cobra.Command) (registryconn.Config, error) {
	f.plainHTTPSet = cmd.Flags().Changed("plain-http")
	if strings.Contains(f.Registry, "://") || strings.Contains(f.Registry, "/") {
		return registryconn.Config{}, fmt.Errorf("--registry %s: give the host[:port] only, such as %s", f.Registry, client.DefaultRegistryAddress)
	}
	if f.Password == "" {
		f.Password = os.Getenv("FLOTILLA_REGISTRY_PASSWORD")
	}
	if (f.Username == "") != (f.Password == "") {
		return registryconn.Config{}, fmt.Errorf("--username and --password go together")
	}
	conn := registryconn.Config{
		Username: f.Username, Password: f.Password,
		DockerConfig:          true,
		InsecureSkipTLSVerify: f.InsecureSkipTLSVerify,
		PlainHTTP:             f.PlainHTTP,
	}
	if !f.plainHTTPSet {
		conn.PlainHTTP = bundle.IsLoopback(f.Registry)
	}
	if f.CAFile != "" {
		data, err := os.ReadFile(f.CAFile)
		if err != nil {
			return registryconn.Config{}, fmt.Errorf("--ca-file: %w", err)
		}
		conn.CAData = data
	}
	return conn, nil
}

// RegistryPublishOptions are the options of `flotilla registry publish`.
type RegistryPublishOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	conn             registryConnectionFlags
	ChartsDir        string
	KubernetesMinors []string
	SigningKey       string
	Output           string
}

// NewRegistryPublishCmd returns `flotilla registry publish`.
func NewRegistryPublishCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryPublishOptions{IOStreams: streams, global: global}
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

The signing key is $FLOTILLA_HOME/registry/signing-key.pem, generated on first use, or
--signing-key. Its public key is written next to it (signing-key.pub.pem): give that file to
'flotilla install packagecontroller --public-key' so clusters trust the bundles.`,
		Example: `  # The curated catalog into the embedded registry (flotilla registry start)
  flotilla registry publish

  # Your own charts into a registry you run, with your key
  flotilla registry publish --charts ./my-charts --registry ghcr.io --repository my-org/packages \
    --username me --password "$GHCR_TOKEN" --signing-key ./bundle-key.pem --kubernetes-minor 1.36`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ValidateOutput(o.Output, OutputJSON, OutputYAML); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	o.conn.add(cmd)
	f := cmd.Flags()
	f.StringVar(&o.ChartsDir, "charts", "", "directory with one chart per subdirectory (default: the curated catalog built into flotilla)")
	f.StringSliceVar(&o.KubernetesMinors, "kubernetes-minor", []string{"1.35", "1.36"}, "Kubernetes minors to build a bundle for (repeat or comma separate)")
	f.StringVar(&o.SigningKey, "signing-key", "", "PEM ECDSA P-256 private key that signs the bundles (default $FLOTILLA_HOME/registry/signing-key.pem, generated when missing)")
	AddOutputFlag(cmd, &o.Output, OutputJSON, OutputYAML)
	return cmd
}

// Run publishes.
func (o *RegistryPublishOptions) Run(cmd *cobra.Command) error {
	conn, err := o.conn.connection(cmd)
	if err != nil {
		return err
	}
	for _, p := range []*string{&o.ChartsDir, &o.SigningKey} {
		if *p != "" {
			if *p, err = absPath(*p); err != nil {
				return err
			}
		}
	}
	c, err := client.New(o.global.Home, o.global.BinDir, o.ErrOut)
	if err != nil {
		return err
	}
	res, err := c.Publish(cmd.Context(), client.PublishOptions{
		Registry:         o.conn.Registry,
		Repository:       o.conn.Repository,
		ChartsDir:        o.ChartsDir,
		KubernetesMinors: o.KubernetesMinors,
		SigningKey:       o.SigningKey,
		Connection:       conn,
	})
	if err != nil {
		if bundle.IsLoopback(o.conn.Registry) && strings.Contains(err.Error(), "connection refused") {
			return fmt.Errorf("%w\nIs the registry running? Start it with 'flotilla registry start'", err)
		}
		return err
	}
	if o.Output != "" {
		return PrintStructured(o.Out, o.Output, res)
	}
	if res.KeyCreated {
		_, _ = fmt.Fprintf(o.ErrOut, "Generated the signing key %s\n", c.DefaultSigningKeyPath())
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

// RegistryListOptions are the options of `flotilla registry list`.
type RegistryListOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	conn            registryConnectionFlags
	KubernetesMinor []string
	PublicKey       string
	Output          string
}

// BundleListing is one line of `flotilla registry list`.
type BundleListing struct {
	Name            string   `json:"name"`
	KubernetesMinor string   `json:"kubernetesMinor"`
	Digest          string   `json:"digest"`
	Packages        []string `json:"packages"`
	// Verified is "ok", or why the bundle must not be used.
	Verified string `json:"verified"`
}

// NewRegistryListCmd returns `flotilla registry list`.
func NewRegistryListCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryListOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the bundles in a registry and verify their signatures",
		Long: `List the bundles of each --kubernetes-minor in <registry>/<repository>, oldest first, with the
packages each lists, and check each signature with --public-key (default: the public key of
the default signing key, $FLOTILLA_HOME/registry/signing-key.pub.pem).`,
		Example: `  flotilla registry list
  flotilla registry list --registry ghcr.io --repository my-org/packages --public-key bundle-key.pub.pem -o yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := ValidateOutput(o.Output, OutputJSON, OutputYAML); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	o.conn.add(cmd)
	cmd.Flags().StringSliceVar(&o.KubernetesMinor, "kubernetes-minor", []string{"1.35", "1.36"}, "Kubernetes minors whose bundles to list")
	cmd.Flags().StringVar(&o.PublicKey, "public-key", "", "PEM public key that verifies the bundles (default $FLOTILLA_HOME/registry/signing-key.pub.pem)")
	AddOutputFlag(cmd, &o.Output, OutputJSON, OutputYAML)
	return cmd
}

// Run lists and verifies.
func (o *RegistryListOptions) Run(cmd *cobra.Command) error {
	conn, err := o.conn.connection(cmd)
	if err != nil {
		return err
	}
	remoteOpts, err := bundle.RemoteOptions(conn)
	if err != nil {
		return err
	}
	keyPath := o.PublicKey
	if keyPath == "" {
		c := client.Client{Home: o.global.Home}
		keyPath = strings.TrimSuffix(c.DefaultSigningKeyPath(), ".pem") + ".pub.pem"
	}
	keyPEM, err := os.ReadFile(keyPath) //nolint:gosec // the key file the user names
	if err != nil {
		return fmt.Errorf("reading the public key: %w (pass --public-key)", err)
	}
	pub, err := bundle.ParsePublicKey(keyPEM)
	if err != nil {
		return fmt.Errorf("%s: %w", keyPath, err)
	}
	ctx := cmd.Context()
	var listing []BundleListing
	for _, minor := range o.KubernetesMinor {
		names, err := bundle.List(ctx, o.conn.Registry, o.conn.Repository, minor, remoteOpts...)
		if err != nil {
			return err
		}
		for _, n := range names {
			l := BundleListing{Name: n, KubernetesMinor: minor, Verified: "ok"}
			s, err := bundle.Pull(ctx, o.conn.Registry+"/"+o.conn.Repository+":"+n, remoteOpts...)
			if err == nil {
				err = bundle.Verify(s, pub)
			}
			if err != nil {
				l.Verified = err.Error()
			}
			l.Digest = s.Digest
			for _, p := range s.Bundle.Packages {
				if len(p.Versions) > 0 {
					l.Packages = append(l.Packages, p.Name+"@"+p.Versions[0].Version)
				}
			}
			listing = append(listing, l)
		}
	}
	if o.Output != "" {
		return PrintStructured(o.Out, o.Output, listing)
	}
	if len(listing) == 0 {
		_, err := fmt.Fprintf(o.ErrOut, "No bundles in %s/%s. Publish some with 'flotilla registry publish'.\n", o.conn.Registry, o.conn.Repository)
		return err
	}
	tw := tabwriter.NewWriter(o.Out, 0, 2, 3, ' ', 0)
	fmt.Fprintln(tw, "BUNDLE\tKUBERNETES\tSIGNATURE\tDIGEST\tPACKAGES")
	for _, l := range listing {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Name, l.KubernetesMinor, l.Verified, orDash(l.Digest), strings.Join(l.Packages, ","))
	}
	return tw.Flush()
}
