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
	clientOptions
	outputOptions
}

// NewRegistryStatusCmd returns `flotilla registry status`.
func NewRegistryStatusCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &RegistryStatusOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Say whether the background registry runs, and where",
		Args:  cobra.NoArgs,
		RunE:  RunE(o),
	}
	o.addFlag(cmd, OutputJSON, OutputYAML)
	return cmd
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
