package cmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
)

// Lifecycle is the one shape of every command: its options struct implements it, and the
// command's RunE is RunE(o). Cobra parses the flags into the struct first (and checks the
// arguments and the flags marked required); then
//
//   - Complete fills in what the flags leave open: the arguments, defaults from the
//     environment or the kubeconfig, the contents of files the flags name, and the client
//     (embed clientOptions, whose Complete builds it; a command with more to complete calls
//     it from its own). It contacts no cluster.
//   - Validate checks the completed options, changes nothing, and says what to do instead; a
//     command with nothing to check beyond what cobra checks says so in a Validate that
//     returns nil. Embedding outputOptions makes -o's check the Validate.
//   - Run does the work, through cli/client (cluster/spec, cli/workflow), and prints to the
//     streams. Domain work (reading and changing clusters, registries, files the user did not
//     name) belongs in cli/client, not here.
type Lifecycle interface {
	Complete(cmd *cobra.Command, args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// RunE runs o's lifecycle with the command's context: the RunE of every command.
func RunE(o Lifecycle) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(cmd, args); err != nil {
			return err
		}
		if err := o.Validate(); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
}

// clientOptions are what a command that reaches clusters, registries or local clusters
// embeds: its streams, the global options, and the cli/client library, which Complete builds
// (the one way a command gets a client).
type clientOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions
	// progress is where the library reports progress: Out for commands whose progress is
	// their output (create, upgrade, delete, apply), ErrOut for those that print a result.
	progress io.Writer
	// client is built by Complete; Run calls it.
	client *client.Client
}

// newClientOptions returns the clientOptions of a command whose progress goes to progress
// (streams.Out or streams.ErrOut).
func newClientOptions(streams genericiooptions.IOStreams, global *GlobalOptions, progress io.Writer) clientOptions {
	return clientOptions{IOStreams: streams, global: global, progress: progress}
}

// Complete builds the client from the global options.
func (o *clientOptions) Complete(*cobra.Command, []string) error {
	c, err := client.New(o.global.Home, o.global.BinDir, o.progress)
	if err != nil {
		return err
	}
	o.client = c
	return nil
}

// outputOptions are the -o flag of a command that prints a result in several formats; their
// Validate checks -o.
type outputOptions struct {
	// Output is "" for the human-readable default, or one of formats.
	Output  string
	formats []string
}

// addFlag registers -o on cmd, accepting formats.
func (o *outputOptions) addFlag(cmd *cobra.Command, formats ...string) {
	o.formats = formats
	AddOutputFlag(cmd, &o.Output, formats...)
}

// Validate checks -o against the formats.
func (o *outputOptions) Validate() error {
	return ValidateOutput(o.Output, o.formats...)
}

// GlobalOptions are the flags every flotilla command has (the root's persistent flags). The
// root parses them and completes them before any command runs; commands receive a pointer
// and read it in their Complete or Run.
type GlobalOptions struct {
	// Kubeconfig is the management cluster's kubeconfig. Empty means none was given: create
	// then makes a management cluster, and commands that need a management cluster say so.
	// $KUBECONFIG is deliberately not a fallback, since its absence changes what create does.
	Kubeconfig string
	// Home is where local clusters keep their data: $FLOTILLA_HOME or ~/.flotilla.
	Home string
	// BinDir is the control plane binary cache root: $FLOTILLA_BIN_CACHE or
	// ~/.cache/flotilla/bin.
	BinDir string
	// Verbosity is the log level: 0 logs only warnings and errors of libraries, higher
	// levels log more; 6 and up include Kubernetes API requests.
	Verbosity int
}

// NewGlobalOptions returns the options with their defaults, read from the environment.
func NewGlobalOptions() *GlobalOptions {
	return &GlobalOptions{
		Home:   controlplane.HomeDir(),
		BinDir: binaries.DefaultRoot(),
	}
}

// AddFlags registers the global flags on fs (the root's persistent flag set).
func (o *GlobalOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"kubeconfig of the management cluster to work with; without it, create makes a new management cluster")
	fs.StringVar(&o.Home, "home", o.Home,
		"directory where local clusters keep their data, logs and pid files (env "+controlplane.HomeEnv+")")
	fs.StringVar(&o.BinDir, "bin-dir", o.BinDir,
		"root of the control plane binary cache, holding one directory per Kubernetes version (env "+binaries.RootEnv+")")
	fs.IntVarP(&o.Verbosity, "v", "v", o.Verbosity, "log verbosity: 0 shows progress and errors, 1 adds what is done, 6 and up show API requests")
}

// Complete expands "~" and makes the paths absolute, so that processes started from another
// directory (the manager) see the same files.
func (o *GlobalOptions) Complete() error {
	for _, p := range []*string{&o.Kubeconfig, &o.Home, &o.BinDir} {
		if *p == "" {
			continue
		}
		abs, err := absPath(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	if o.Verbosity < 0 {
		return fmt.Errorf("-v %d: verbosity is 0 or more", o.Verbosity)
	}
	return nil
}

// absPath expands a leading "~/" (which the shell leaves alone in --flag=~/x) and makes path
// absolute.
func absPath(path string) (string, error) {
	if path == "~" || strings.HasPrefix(path, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("expanding %s: %w", path, err)
		}
		path = filepath.Join(home, strings.TrimPrefix(path, "~"))
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", path, err)
	}
	return abs, nil
}

// setupLogging sends the logs of flotilla and of the libraries it uses (controller-runtime,
// client-go through klog) to errOut at the given verbosity, and puts the logger into the
// command's context for ctrl.LoggerFrom.
func setupLogging(cmd *cobra.Command, errOut io.Writer, verbosity int) error {
	logger := textlogger.NewLogger(textlogger.NewConfig(
		textlogger.Verbosity(verbosity),
		textlogger.Output(errOut),
	))
	// klog keeps its own verbosity for the V() checks of client-go.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	if err := klogFlags.Set("v", strconv.Itoa(verbosity)); err != nil {
		return fmt.Errorf("setting log verbosity: %w", err)
	}
	klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
	// The phase lines are what a command shows; what libraries and our packages log as Info
	// (clusterctl's progress, API warnings) is detail, shown from -v 1 on. Errors always show.
	detail := logger.V(1)
	ctrl.SetLogger(detail)
	cmd.SetContext(ctrl.LoggerInto(cmd.Context(), detail))
	return nil
}

// Output formats of -o.
const (
	OutputJSON = "json"
	OutputYAML = "yaml"
	OutputWide = "wide"
)

// AddOutputFlag registers -o/--output on cmd, storing into p, accepting formats (and "" for
// the command's human-readable default) and completing them in shells.
func AddOutputFlag(cmd *cobra.Command, p *string, formats ...string) {
	cmd.Flags().StringVarP(p, "output", "o", *p, "output format, one of: "+strings.Join(formats, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
}

// ValidateOutput checks a -o value against the formats a command supports; "" (the default,
// human-readable output) is always accepted.
func ValidateOutput(format string, formats ...string) error {
	if format == "" || slices.Contains(formats, format) {
		return nil
	}
	return fmt.Errorf("-o %s is not supported here; use one of: %s", format, strings.Join(formats, ", "))
}

// PrintStructured writes v to w as indented JSON or as YAML.
func PrintStructured(w io.Writer, format string, v any) error {
	var data []byte
	var err error
	switch format {
	case OutputJSON:
		data, err = json.MarshalIndent(v, "", "  ")
		data = append(data, '\n')
	case OutputYAML:
		data, err = yaml.Marshal(v)
	default:
		return fmt.Errorf("output format %q is not json or yaml", format)
	}
	if err != nil {
		return fmt.Errorf("encoding output: %w", err)
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// exactlyOneArg is cobra.ExactArgs(1) with an error that shows the usage line.
func exactlyOneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch len(args) {
		case 1:
			return nil
		case 0:
			return fmt.Errorf("%s is required: %s", what, cmd.UseLine())
		default:
			return fmt.Errorf("expected one %s, got %d (%s): %s", what, len(args), strings.Join(args, " "), cmd.UseLine())
		}
	}
}
