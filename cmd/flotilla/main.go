package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/addons/values"
	"github.com/flotilla-dev/flotilla/cli/cmd"
	"github.com/flotilla-dev/flotilla/infrastructure/inmemory"
)

func main() {
	// The binary's child processes, which are no CLI commands: a render worker of values
	// templates (started by the manager and by `flotilla addons diff`), `flotilla
	// inmemory-provider` (started by the manager). Each returns unless this process is one.
	values.RunWorkerIfRequested()
	inmemory.RunProcessIfRequested()

	// The first SIGINT or SIGTERM cancels the context, so that a workflow stops between phases
	// and writes its checkpoint; a second one kills the process as usual.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()

	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	err := newRootCmd(streams).ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

// newRootCmd is the CLI of cli/cmd with the manager command, which only this binary links.
func newRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	root := cmd.NewRootCmd(streams)
	root.AddCommand(newManagerCmd(streams))
	return root
}
