package cmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// RegistryServeOptions are the options of `flotilla registry serve`.
type RegistryServeOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	Registry client.RegistryOptions
	Quiet    bool
}

// NewRegistryServeCmd returns `flotilla registry serve`.
func NewRegistryServeCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryServeOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the embedded OCI registry in the foreground",
		Long: `Serve an OCI registry (go-containerregistry's, with blobs, manifests and unfinished uploads
kept on disk) until interrupted. Every request is logged to the error stream unless --quiet.

On a loopback address (the default) it may serve plain HTTP to anyone on this machine. Any
other --listen address needs TLS (--tls-cert-file, --tls-key-file) and authentication
(--htpasswd, users with bcrypt passwords: 'flotilla registry htpasswd'); clients log in with
HTTP basic auth, as 'helm registry login', 'docker login', oras and containerd do.
'flotilla registry start' runs it in the background instead.`,
		Example: `  flotilla registry serve
  flotilla registry serve --listen 127.0.0.1:5001 --dir /tmp/registry

  # Reachable from other machines: TLS and users
  flotilla registry htpasswd ci --file registry.htpasswd < ci-password.txt
  flotilla registry serve --listen 0.0.0.0:5001 --tls-cert-file tls.crt --tls-key-file tls.key \
    --htpasswd registry.htpasswd`,
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
	addRegistryServeFlags(cmd.Flags(), &o.Registry)
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "do not log requests")
	return cmd
}

// Complete fills in the default directory and makes the paths absolute.
func (o *RegistryServeOptions) Complete() error {
	c, err := client.New(o.global.Home, o.global.BinDir, o.ErrOut)
	if err != nil {
		return err
	}
	o.Registry, err = c.RegistryDefaults(o.Registry)
	return err
}

// Validate checks the flags: off loopback, TLS and authentication are required.
func (o *RegistryServeOptions) Validate() error {
	return o.Registry.Validate()
}

// Run serves until SIGINT or SIGTERM.
func (o *RegistryServeOptions) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var log io.Writer
	if !o.Quiet {
		log = o.ErrOut
	}
	scheme, auth := "http", "no authentication"
	if o.Registry.TLSCertFile != "" {
		scheme = "https"
	}
	if o.Registry.HTPasswdFile != "" {
		auth = "the users of " + o.Registry.HTPasswdFile
	}
	_, _ = fmt.Fprintf(o.ErrOut, "Serving an OCI registry at %s://%s for %s, with data in %s\n", scheme, o.Registry.Listen, auth, o.Registry.Dir)
	return client.ServeRegistry(ctx, o.Registry, log)
}
