package cmd

import (
	"fmt"
	"net"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
)

// InstallPackageControllerOptions are the options of `flotilla install packagecontroller`.
type InstallPackageControllerOptions struct {
	genericiooptions.IOStreams
	global *GlobalOptions

	Cluster, Registry, Repository, PublicKeyFile string
	Username, PasswordEnv, CAFile                string
	PlainHTTP, Own                               bool
}

// NewInstallPackageControllerCmd returns `flotilla install packagecontroller`.
func NewInstallPackageControllerCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &InstallPackageControllerOptions{IOStreams: streams, global: global}
	cmd := &cobra.Command{
		Use:   "packagecontroller --cluster NAME",
		Short: "Set up curated packages for a cluster: bundle source, public key, PackageBundleController",
		Long: `Write the management cluster's packages configuration (ConfigMap
flotilla-packages/package-defaults: the registry and repository of signed bundles, the public key
that verifies them, plain HTTP for a loopback registry) from the flags given, and create the
cluster's PackageBundleController when it has none (Flotilla creates one for every cluster; this
also makes one for a cluster created before packages were set up).

--kubeconfig must be the management cluster's: a workload cluster's kubeconfig is refused.`,
		Example: `  flotilla install packagecontroller --cluster w1 --kubeconfig mgmt/mgmt.kubeconfig \
    --registry 127.0.0.1:5001 --repository flotilla/bundles --plain-http \
    --public-key ~/.flotilla/registry/signing-key.pub.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.Run(cmd) },
	}
	addPackagesClusterFlag(cmd, &o.Cluster, "the cluster to set packages up for")
	cmd.Flags().StringVar(&o.Registry, "registry", "", "registry host[:port] of the signed bundles")
	cmd.Flags().StringVar(&o.Repository, "repository", "", "repository of the bundles in the registry, e.g. flotilla/bundles")
	cmd.Flags().StringVar(&o.PublicKeyFile, "public-key", "", "PEM public key (ECDSA P-256) the bundles are signed for")
	cmd.Flags().BoolVar(&o.PlainHTTP, "plain-http", false, "reach the registries over plain HTTP (the default for a loopback --registry)")
	cmd.Flags().StringVar(&o.Username, "username", "", "registry user name (stored in Secret flotilla-packages/"+client.CredentialsSecretName+")")
	cmd.Flags().StringVar(&o.PasswordEnv, "password-env", "", "name of the environment variable holding the registry password or token")
	cmd.Flags().StringVar(&o.CAFile, "ca-file", "", "PEM file of the CA the registry's certificate is signed by")
	cmd.Flags().BoolVar(&o.Own, "cluster-source", false, "make --registry/--repository this cluster's own source (spec.source) instead of the default")
	return cmd
}

// isLoopbackRegistry reports whether registry (host[:port]) is on a loopback address.
func isLoopbackRegistry(registry string) bool {
	if registry == "" {
		return false
	}
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Run writes the defaults and creates the PBC.
func (o *InstallPackageControllerOptions) Run(cmd *cobra.Command) error {
	opts := client.PackageControllerOptions{Cluster: o.Cluster}
	if o.PublicKeyFile != "" {
		data, err := os.ReadFile(o.PublicKeyFile)
		if err != nil {
			return fmt.Errorf("reading --public-key: %w", err)
		}
		opts.PublicKey = data
	}
	opts.Username = o.Username
	if o.PasswordEnv != "" {
		opts.Password = os.Getenv(o.PasswordEnv)
		if opts.Password == "" {
			return fmt.Errorf("--password-env %s: the variable is empty or not set", o.PasswordEnv)
		}
	}
	if o.CAFile != "" {
		data, err := os.ReadFile(o.CAFile)
		if err != nil {
			return fmt.Errorf("reading --ca-file: %w", err)
		}
		opts.CAData = data
	}
	switch {
	case cmd.Flags().Changed("plain-http"):
		opts.PlainHTTP = &o.PlainHTTP
	case isLoopbackRegistry(o.Registry):
		// Flotilla's embedded registry speaks plain HTTP on a loopback address.
		plain := true
		opts.PlainHTTP = &plain
		_, _ = fmt.Fprintf(o.ErrOut, "Registry %s is on this machine: reaching it over plain HTTP (--plain-http=false for TLS)\n", o.Registry)
	}
	if o.Own {
		if o.Registry == "" || o.Repository == "" {
			return fmt.Errorf("--cluster-source needs --registry and --repository")
		}
		opts.Source = &packagesv1.BundleSource{Registry: o.Registry, Repository: o.Repository}
	} else {
		opts.Registry, opts.Repository = o.Registry, o.Repository
	}
	c, err := newPackagesClient(o.global, o.ErrOut)
	if err != nil {
		return err
	}
	pbc, err := c.InstallPackageController(cmd.Context(), o.global.Kubeconfig, opts)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "PackageBundleController %s/%s ready to read bundles (see `flotilla get packagebundlecontrollers`)\n", pbc.Namespace, pbc.Name)
	return err
}
