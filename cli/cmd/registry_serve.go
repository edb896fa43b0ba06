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
	clientOptions

	Registry client.RegistryOptions
	Quiet    bool
}

// NewRegistryServeCmd returns `flotilla registry serve`.
func NewRegistryServeCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryServeOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the embedded OCI registry in the foreground",
		Long: `Serve an OCI registry (go-containerregistry's, with blobs, manifests and unfinished uploads
kept on disk) until interrupted. Every request is logged to the error stream unless --quiet.

Every push and delete authenticates. On a loopback address (the default) it serves plain HTTP,
and without --htpasswd it takes writes from the push credential it generates into
$FLOTILLA_HOME/registry/push-credentials (mode 0600; the flotilla CLI sends it) and pulls from
anyone on this machine, real nodes included. Any other --listen address needs TLS
(--tls-cert-file, --tls-key-file) and authentication of every request (--htpasswd, users with
bcrypt passwords: 'flotilla registry htpasswd'); clients log in with HTTP basic auth, as 'helm
registry login', 'docker login', oras and containerd do.
'flotilla registry start' runs it in the background instead.`,
		Example: `  flotilla registry serve
  flotilla registry serve --listen 127.0.0.1:5001 --dir /tmp/registry

  # Reachable from other machines: TLS and users
  flotilla registry htpasswd ci --file registry.htpasswd < ci-password.txt
  flotilla registry serve --listen 0.0.0.0:5001 --tls-cert-file tls.crt --tls-key-file tls.key \
    --htpasswd registry.htpasswd`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	addRegistryServeFlags(cmd.Flags(), &o.Registry)
	cmd.Flags().BoolVarP(&o.Quiet, "quiet", "q", false, "do not log requests")
	return cmd
}

// Complete builds the client, fills in the default directory and makes the paths absolute.
func (o *RegistryServeOptions) Complete(cmd *cobra.Command, args []string) error {
	err := o.clientOptions.Complete(cmd, args)
	if err != nil {
		return err
	}
	o.Registry, err = o.client.RegistryDefaults(o.Registry)
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
	scheme, auth := "http", "the users of "+o.Registry.HTPasswdFile
	if o.Registry.TLSCertFile != "" {
		scheme = "https"
	}
	if o.Registry.AnonymousPull {
		auth = "anyone to pull and the users of " + o.Registry.HTPasswdFile + " to push"
	}
	_, _ = fmt.Fprintf(o.ErrOut, "Serving an OCI registry at %s://%s for %s, with data in %s\n", scheme, o.Registry.Listen, auth, o.Registry.Dir)
	return client.ServeRegistry(ctx, o.Registry, log)
}
