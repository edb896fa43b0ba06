package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// RegistryStatusOptions are the options of `flotilla registry status`.
type RegistryStatusOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
	Output string

	client *client.Client
}

// NewRegistryStatusCmd returns `flotilla registry status`.
func NewRegistryStatusCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryStatusOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say whether the background registry runs, and where",
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
	AddOutputFlag(cmd, &o.Output, OutputJSON, OutputYAML)
	return cmd
}

// Complete builds the client.
func (o *RegistryStatusOptions) Complete() error {
	var err error
	o.client, err = client.New(o.global.Home, o.global.BinDir, o.ErrOut)
	return err
}

// Validate checks -o.
func (o *RegistryStatusOptions) Validate() error {
	return ValidateOutput(o.Output, OutputJSON, OutputYAML)
}

// Run reports the registry, or fails when it does not run or answer.
func (o *RegistryStatusOptions) Run(ctx context.Context) error {
	info, running := o.client.RegistryStatus()
	if !running {
		return errors.New("the registry is not running; start it with 'flotilla registry start'")
	}
	if err := client.RegistryReady(ctx, info.Address, info.TLS); err != nil {
		return fmt.Errorf("the registry runs (pid %d) but does not answer: %w; see %s", info.PID, err, info.Log)
	}
	if o.Output != "" {
		return PrintStructured(o.Out, o.Output, info)
	}
	_, err := fmt.Fprintf(o.Out, "The registry runs at %s (pid %d, data %s, log %s)\n", registryURL(info), info.PID, info.Dir, info.Log)
	return err
}
