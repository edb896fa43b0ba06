package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/pkg/version"
)

// VersionOptions are the options of `flotilla version`.
type VersionOptions struct {
	genericiooptions.IOStreams
	// outputOptions hold -o: "" for one line, json or yaml.
	outputOptions
}

// versionOutput is what -o json|yaml prints. It is an object so that a server version can join
// the client's later without breaking scripts.
type versionOutput struct {
	ClientVersion version.Info `json:"clientVersion"`
}

// NewVersionCmd returns `flotilla version`.
func NewVersionCmd(streams genericiooptions.IOStreams) *cobra.Command {
	o := &VersionOptions{IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of flotilla",
		Example: `  flotilla version
  flotilla version -o json`,
		Args: cobra.NoArgs,
		RunE: RunE(o),
	}
	o.addFlag(cmd, OutputJSON, OutputYAML)
	return cmd
}

// Complete has nothing to fill in: the version is the binary's.
func (o *VersionOptions) Complete(*cobra.Command, []string) error { return nil }

// Run prints the version.
func (o *VersionOptions) Run(context.Context) error {
	info := version.Get()
	if o.Output != "" {
		return PrintStructured(o.Out, o.Output, versionOutput{ClientVersion: info})
	}
	_, err := fmt.Fprintf(o.Out, "Client Version: %s\n", info)
	return err
}
