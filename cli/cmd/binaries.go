package cmd

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// NewBinariesCmd returns `flotilla binaries`, which builds and lists the control plane programs
// local clusters run.
func NewBinariesCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	cmd := newGroupCmd("binaries", "Build and list the control plane programs local clusters run")
	cmd.Long = `Local clusters run kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok as
processes, built from source once per machine and Kubernetes version into the binary cache
(--bin-dir, $` + binaries.RootEnv + `, default ~/.cache/flotilla/bin), one directory per version.
Building needs Go and the Go module proxy, nothing else: the flotilla binary carries the Go
modules the programs are built from.`
	cmd.AddCommand(NewBinariesBuildCmd(streams, global), NewBinariesListCmd(streams, global))
	return cmd
}

// BinariesBuildOptions are the options of `flotilla binaries build`.
type BinariesBuildOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
	// Versions to build: minors ("1.35") or full versions ("v1.35.4").
	Versions []string
	// All builds every supported version.
	All bool
}

// NewBinariesBuildCmd returns `flotilla binaries build`.
func NewBinariesBuildCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &BinariesBuildOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "build VERSION... | --all",
		Short: "Build the control plane programs of Kubernetes versions into the binary cache",
		Long: `Build kube-apiserver, kube-controller-manager, kube-scheduler, etcd and kwok for each VERSION (a
minor such as 1.35, or a supported version such as v1.35.4) into <bin-dir>/<version>/, with go
build through the Go module proxy. Programs already in the cache are kept, so running it again
is cheap. Kubernetes takes about 10 minutes on 2 cores, once per machine and version; progress
is printed as it goes. Supported: ` + strings.Join(binaries.SupportedMinors(), ", ") + `.`,
		Example: `  flotilla binaries build 1.35
  flotilla binaries build --all
  flotilla binaries build v1.36.3 --bin-dir /var/cache/flotilla`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Versions = args
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd)
		},
	}
	cmd.Flags().BoolVar(&o.All, "all", false, "build every supported version")
	return cmd
}

// Validate checks that versions are given, or --all.
func (o *BinariesBuildOptions) Validate() error {
	switch {
	case o.All && len(o.Versions) > 0:
		return fmt.Errorf("give versions or --all, not both")
	case !o.All && len(o.Versions) == 0:
		return fmt.Errorf("name the Kubernetes versions to build (%s), or --all", strings.Join(binaries.SupportedMinors(), ", "))
	}
	for _, v := range o.Versions {
		if _, err := binaries.ResolveMinor(v); err != nil {
			return err
		}
	}
	return nil
}

// Run builds each version in turn.
func (o *BinariesBuildOptions) Run(cmd *cobra.Command) error {
	versions := o.Versions
	if o.All {
		versions = binaries.Supported
	}
	b := &binaries.Builder{Root: o.global.BinDir, Out: o.Out}
	for _, v := range versions {
		set, err := b.Build(cmd.Context(), v)
		if err != nil {
			return err
		}
		fmt.Fprintf(o.Out, "Kubernetes %s is ready in %s\n", set.Version, set.Dir)
	}
	return nil
}

// BinariesListOptions are the options of `flotilla binaries list`.
type BinariesListOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
	// Output is "", json or yaml.
	Output string
}

// binariesListing is one version of `flotilla binaries list -o json|yaml`.
type binariesListing struct {
	Version string   `json:"version"`
	Minor   string   `json:"minor"`
	Ready   bool     `json:"ready"`
	Missing []string `json:"missing,omitempty"`
	Dir     string   `json:"dir"`
}

// NewBinariesListCmd returns `flotilla binaries list`.
func NewBinariesListCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &BinariesListOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the supported Kubernetes versions and whether their programs are built",
		Example: `  flotilla binaries list
  flotilla binaries list -o json`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if err := ValidateOutput(o.Output, OutputJSON, OutputYAML); err != nil {
				return err
			}
			return o.Run()
		},
	}
	AddOutputFlag(cmd, &o.Output, OutputJSON, OutputYAML)
	return cmd
}

// Run prints one row per supported version.
func (o *BinariesListOptions) Run() error {
	var listings []binariesListing
	out := &listOutput{columns: []string{"VERSION", "MINOR", "STATUS", "DIRECTORY"}}
	minors := binaries.SupportedMinors()
	for i, v := range binaries.Supported {
		set := binaries.Set{Dir: filepath.Join(o.global.BinDir, v), Version: v}
		missing := set.Missing(binaries.Names...)
		status := "built"
		if len(missing) > 0 {
			status = "missing " + strings.Join(missing, ", ") + "; run: " + set.BuildCommand()
		}
		listings = append(listings, binariesListing{Version: v, Minor: minors[i], Ready: len(missing) == 0, Missing: missing, Dir: set.Dir})
		out.row(v, minors[i], status, set.Dir)
	}
	out.object = listings
	return out.print(o.IOStreams, o.Output)
}
