package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// RegistryStopOptions are the options of `flotilla registry stop`.
type RegistryStopOptions struct {
	clientOptions
}

// NewRegistryStopCmd returns `flotilla registry stop`.
func NewRegistryStopCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryStopOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	return &cobra.Command{
		Use:   "stop",
		Short: "Stop the background registry (its data stays)",
		Args:  cobra.NoArgs,
		RunE:  RunE(o),
	}
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
