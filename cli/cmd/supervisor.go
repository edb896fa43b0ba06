package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

// SupervisorOptions are the options of `flotilla supervisor`.
type SupervisorOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	IdleExit time.Duration
}

// NewSupervisorCmd returns `flotilla supervisor`, the supervisor of a Flotilla home.
func NewSupervisorCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &SupervisorOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "supervisor",
		Short: "Keep the processes of local clusters and the registry running (in the foreground)",
		Long: `Run the supervisor of the Flotilla home in the foreground, until interrupted: every second it
looks at the processes recorded under $FLOTILLA_HOME/clusters/*/run and $FLOTILLA_HOME/registry/run
(control planes, managers, the registry) and starts again, from its record, each one that exited:
at once after a stable run, with a back-off of 1 s doubling up to a minute after quick exits.
One supervisor runs per home; a second one waits and takes over when the first stops.

Commands that start local clusters or the registry start it in the background themselves, and it
exits once nothing is left to supervise. Run it from systemd to bring the fleet back at boot:
'flotilla start --print-systemd-unit' writes the unit. See docs/local-provider.md.`,
		Example: `  flotilla supervisor --idle-exit 0`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.IdleExit < 0 {
				return fmt.Errorf("--idle-exit %s: a duration of 0 (never) or more", o.IdleExit)
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().DurationVar(&o.IdleExit, "idle-exit", supervisor.DefaultIdleExit, "exit after this long with nothing to supervise; 0 never exits")
	return cmd
}

// Run supervises until SIGINT or SIGTERM. It logs every exit and restart, at any verbosity.
func (o *SupervisorOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(o.global.Verbosity), textlogger.Output(o.ErrOut)))
	ctx = ctrl.LoggerInto(ctx, log)
	idle := o.IdleExit
	if idle == 0 {
		idle = -1
	}
	return supervisor.Run(ctx, supervisor.Options{Home: o.global.Home, Dirs: client.SupervisedDirs(o.global.Home), Prepare: controlplane.Prepare, IdleExit: idle})
}
