package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/internal/version"
)

// VersionOptions are the options of `flotilla version`.
type VersionOptions struct {
	genericiooptions.IOStreams
	// Output is "" for one line, or json or yaml.
	Output string
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
		RunE: func(*cobra.Command, []string) error {
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	AddOutputFlag(cmd, &o.Output, OutputJSON, OutputYAML)
	return cmd
}

// Validate checks the output format.
func (o *VersionOptions) Validate() error {
	return ValidateOutput(o.Output, OutputJSON, OutputYAML)
}

// Run prints the version.
func (o *VersionOptions) Run() error {
	info := version.Get()
	if o.Output != "" {
		return PrintStructured(o.Out, o.Output, versionOutput{ClientVersion: info})
	}
	_, err := fmt.Fprintf(o.Out, "Client Version: %s\n", info)
	return err
}
