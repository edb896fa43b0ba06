package cmd

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/pkg/netaddr"
)

// NewRegistryCmd returns `flotilla registry`, the embedded OCI registry and the publishing of
// charts and signed bundles.
func NewRegistryCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	cmd := newGroupCmd("registry", "Run the embedded OCI registry and publish charts and signed package bundles")
	cmd.Long = `An OCI registry for curated packages: Helm charts and the signed bundles that list them.

'flotilla registry start' runs Flotilla's embedded registry in the background (data under
$FLOTILLA_HOME/registry/data, kept across restarts); 'flotilla registry publish' pushes the
curated charts (or your own) and a signed bundle per Kubernetes minor to it, or to any OCI
registry you already run. The embedded registry authenticates every push and delete: on
loopback by default with the push credential it generates into $FLOTILLA_HOME/registry
(0600), which the CLI sends to it, while anyone may pull; off loopback it serves TLS and
authenticates every request of its users ('flotilla registry htpasswd').
See docs/packages-registry.md.`
	cmd.AddCommand(
		NewRegistryServeCmd(streams, global),
		NewRegistryStartCmd(streams, global),
		NewRegistryStopCmd(streams, global),
		NewRegistryStatusCmd(streams, global),
		NewRegistryHTPasswdCmd(streams, global),
		NewRegistryPublishCmd(streams, global),
		NewRegistryListCmd(streams, global),
	)
	return cmd
}

// addRegistryServeFlags registers the flags that say where and how the embedded registry runs,
// shared by serve and start.
func addRegistryServeFlags(fs *pflag.FlagSet, o *client.RegistryOptions) {
	fs.StringVar(&o.Listen, "listen", client.DefaultRegistryAddress, "address to serve on; off loopback, --tls-cert-file, --tls-key-file and --htpasswd are required")
	fs.BoolVar(&o.AnonymousPull, "anonymous-pull", false, "let clients without credentials pull, and nothing more (on loopback only; set when --htpasswd is not given)")
	fs.StringVar(&o.Dir, "dir", "", "directory for blobs and manifests (default $FLOTILLA_HOME/registry/data)")
	fs.StringVar(&o.TLSCertFile, "tls-cert-file", "", "serve HTTPS with this certificate (PEM)")
	fs.StringVar(&o.TLSKeyFile, "tls-key-file", "", "private key of --tls-cert-file (PEM)")
	fs.StringVar(&o.HTPasswdFile, "htpasswd", "", "require HTTP basic authentication by the users of this file (user:bcrypt-hash lines; 'flotilla registry htpasswd' writes them); default on loopback: the push credential generated into $FLOTILLA_HOME/registry/push-credentials, with --anonymous-pull")
	fs.StringSliceVar(&o.PullOnlyUsers, "pull-only-users", nil, "users of --htpasswd who may pull and nothing more (comma-separated), such as the user a management cluster's mirror gives every real node")
	fs.Int64Var(&o.MaxBlobSize, "max-blob-size", 0, "largest blob accepted, in bytes (default 512 MiB)")
	fs.DurationVar(&o.UploadTimeout, "upload-timeout", 0, "an unfinished upload that sees no request for this long is deleted (default 10m)")
	fs.IntVar(&o.MaxUploads, "max-uploads", 0, "most uploads in progress at once (default 32)")
}

// registryRemote is what publish and list share: the flags that say how to reach a registry, and
// -o (its Validate checks -o; RegistryConnection checks the rest).
type registryRemote struct {
	client.RegistryConnectionOptions
	outputOptions
	Repository string
	plainHTTP  bool
}

// add registers the flags: --registry and --repository, how to reach the registry, and -o.
func (f *registryRemote) add(cmd *cobra.Command) {
	f.addRegistry(cmd)
	cmd.Flags().StringVar(&f.Repository, "repository", client.DefaultRegistryRepository, "repository in the registry: charts go to <repository>/<chart>, bundles to <repository>:<bundle>")
}

// addRegistry registers --registry, the flags that say how to reach it, and -o.
func (f *registryRemote) addRegistry(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.Registry, "registry", client.DefaultRegistryAddress, "the registry's host[:port]")
	f.addConnection(fs)
	f.addFlag(cmd, OutputJSON, OutputYAML)
}

// addConnection registers the flags that say how to reach the registry, but not which one.
func (f *registryRemote) addConnection(fs *pflag.FlagSet) {
	fs.StringVar(&f.CAFile, "ca-file", "", "PEM certificate authorities to trust for the registry's TLS certificate, besides the system's")
	fs.BoolVar(&f.InsecureSkipTLSVerify, "insecure-skip-tls-verify", false, "do not verify the registry's TLS certificate")
	fs.BoolVar(&f.plainHTTP, "plain-http", false, "speak plain HTTP to the registry (default: true for loopback registries such as 127.0.0.1:5001 unless --ca-file or --insecure-skip-tls-verify is given, false otherwise)")
	fs.StringVar(&f.Username, "username", "", "registry username (default: the credentials 'helm registry login', then 'docker login' stored)")
	fs.StringVar(&f.Password, "password", "", "registry password or token (or env FLOTILLA_REGISTRY_PASSWORD)")
}

// explain adds to err, from a push to the registry, how to start the embedded registry when the
// registry is on loopback and refused the connection.
func (f *registryRemote) explain(err error) error {
	if netaddr.IsLoopback(f.Registry) && strings.Contains(err.Error(), "connection refused") {
		return fmt.Errorf("%w\nIs the registry running? Start it with 'flotilla registry start'", err)
	}
	return err
}

// complete takes --plain-http only when it is given and the password from the environment when
// no flag gives it, and makes the paths absolute.
func (f *registryRemote) complete(cmd *cobra.Command, paths ...*string) error {
	if cmd.Flags().Changed("plain-http") {
		f.PlainHTTP = &f.plainHTTP
	}
	if f.Password == "" {
		f.Password = os.Getenv("FLOTILLA_REGISTRY_PASSWORD")
	}
	for _, p := range append(paths, &f.CAFile) {
		if *p == "" {
			continue
		}
		abs, err := absPath(*p)
		if err != nil {
			return err
		}
		*p = abs
	}
	return nil
}
