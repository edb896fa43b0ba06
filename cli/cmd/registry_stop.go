package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// RegistryStopOptions are the options of `flotilla registry stop`.
type RegistryStopOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	client *client.Client
}

// NewRegistryStopCmd returns `flotilla registry stop`.
func NewRegistryStopCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryStopOptions{IOStreams: streams, global: global}
	return &cobra.Command{
		Use:   "stop",
		Short: "Stop the background registry (its data stays)",
		Args:  cobra.NoArgs,
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
}

// Complete builds the client.
func (o *RegistryStopOptions) Complete() error {
	var err error
	o.client, err = client.New(o.global.Home, o.global.BinDir, o.ErrOut)
	return err
}

// Validate has nothing to check: stop takes no flags.
func (o *RegistryStopOptions) Validate() error { return nil }

// Run stops the registry if it runs.
func (o *RegistryStopOptions) Run(ctx context.Context) error {
	info, running := o.client.RegistryStatus()
	if err := o.client.StopRegistry(ctx); err != nil {
		return err
	}
	msg := "The registry was not running."
	if running {
		msg = "Stopped the registry; its data stays in " + info.Dir + "."
	}
	_, err := fmt.Fprintln(o.Out, msg)
	return err
}
