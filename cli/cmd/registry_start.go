package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// RegistryStartOptions are the options of `flotilla registry start`.
type RegistryStartOptions struct {
	clientOptions
	outputOptions

	Registry client.RegistryOptions
}

// NewRegistryStartCmd returns `flotilla registry start`.
func NewRegistryStartCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryStartOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run the embedded OCI registry in the background",
		Long: `Run 'flotilla registry serve' as a background process that outlives this command, and wait
until it answers. Its pid file and log are under $FLOTILLA_HOME/registry/{run,logs}.
A registry already running with the same flags is left alone; with other flags it is restarted.
It takes the flags of 'flotilla registry serve': pushes and deletes authenticate (by default
with the push credential generated into $FLOTILLA_HOME/registry/push-credentials, which the
CLI uses); off loopback, TLS and --htpasswd are required.`,
		Example: `  flotilla registry start
  flotilla registry start --listen 127.0.0.1:5002 --dir /tmp/registry
  flotilla registry start --listen 0.0.0.0:5001 --tls-cert-file tls.crt --tls-key-file tls.key --htpasswd registry.htpasswd`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	addRegistryServeFlags(cmd.Flags(), &o.Registry)
	o.addFlag(cmd, OutputJSON, OutputYAML)
	return cmd
}

// Complete builds the client and fills in the defaults.
func (o *RegistryStartOptions) Complete(cmd *cobra.Command, args []string) error {
	err := o.clientOptions.Complete(cmd, args)
	if err != nil {
		return err
	}
	o.Registry, err = o.client.RegistryDefaults(o.Registry)
	return err
}

// Validate checks the flags before anything starts.
func (o *RegistryStartOptions) Validate() error {
	if err := o.outputOptions.Validate(); err != nil {
		return err
	}
	return o.Registry.Validate()
}

// Run starts the registry unless it runs.
func (o *RegistryStartOptions) Run(ctx context.Context) error {
	info, err := o.client.EnsureRegistry(ctx, o.Registry)
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
	_, err = fmt.Fprintf(o.Out, "%s the registry at %s (pid %d, data %s, log %s)\n", verb, registryURL(info), info.PID, info.Dir, info.Log)
	return err
}

// registryURL is where a running registry serves, with its scheme, and whether it
// authenticates.
func registryURL(info client.RegistryInfo) string {
	url := "http://" + info.Address
	if info.TLS {
		url = "https://" + info.Address
	}
	switch {
	case info.AnonymousPull:
		url += ", pushes by its users only"
	case info.Authenticated:
		url += ", users only"
	}
	return url
}
