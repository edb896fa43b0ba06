package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
)

// StartOptions are the options of `flotilla start`.
type StartOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	PrintSystemdUnit bool
}

// NewStartCmd returns `flotilla start`, which brings the local clusters of the home back.
func NewStartCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &StartOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Bring back every local cluster of this Flotilla home, its managers and the registry (after a restart of the machine)",
		Long: `Start again the processes of every local cluster of $FLOTILLA_HOME, and the embedded registry,
after they stopped: after a restart of the machine, or once every process was killed. Nothing is
lost: etcd data, certificates, checkpoints and Helm releases are on disk. The supervisor of the
home starts every recorded process; this command starts the supervisor and waits, in dependency
order, for each management cluster's control plane, then its manager, then the other clusters'
control planes, then the registry, printing each step. What runs already is adopted, never
started twice.

To do this at boot, run the supervisor from systemd: --print-systemd-unit prints the unit and
how to install it.`,
		Example: `  flotilla start
  flotilla start --print-systemd-unit > ~/.config/systemd/user/flotilla.service`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.PrintSystemdUnit, "print-systemd-unit", false, "print a systemd unit that runs the supervisor of this home at boot, and start nothing")
	return cmd
}

// Run starts the local clusters, or prints the unit.
func (o *StartOptions) Run(ctx context.Context) error {
	c, err := client.New(o.global.Home, o.global.BinDir, o.Out)
	if err != nil {
		return err
	}
	if o.PrintSystemdUnit {
		unit, err := c.SystemdUnit()
		if err != nil {
			return err
		}
		_, err = fmt.Fprint(o.Out, unit)
		return err
	}
	return c.StartLocal(ctx)
}
