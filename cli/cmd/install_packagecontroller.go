package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
)

// InstallPackageControllerOptions are the options of `flotilla install packagecontroller`.
type InstallPackageControllerOptions struct {
	clientOptions

	Cluster, Registry, Repository, PublicKeyFile string
	Username, PasswordEnv, CAFile                string
	PlainHTTP, Own                               bool

	// controller is what Complete makes of the flags for the library.
	controller client.PackageControllerOptions
}

// NewInstallPackageControllerCmd returns `flotilla install packagecontroller`.
func NewInstallPackageControllerCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command {
	o := &InstallPackageControllerOptions{clientOptions: newClientOptions(streams, global, streams.ErrOut)}
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
		RunE: RunE(o),
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

// Complete reads the files and the password variable the flags name, and builds the library's
// options and the client. Without --plain-http the library decides from the registry's address.
func (o *InstallPackageControllerOptions) Complete(cmd *cobra.Command, args []string) error {
	c := client.PackageControllerOptions{Cluster: o.Cluster, Username: o.Username}
	if o.PublicKeyFile != "" {
		data, err := os.ReadFile(o.PublicKeyFile)
		if err != nil {
			return fmt.Errorf("reading --public-key: %w", err)
		}
		c.PublicKey = data
	}
	if o.PasswordEnv != "" {
		c.Password = os.Getenv(o.PasswordEnv)
	}
	if o.CAFile != "" {
		data, err := os.ReadFile(o.CAFile)
		if err != nil {
			return fmt.Errorf("reading --ca-file: %w", err)
		}
		c.CAData = data
	}
	if cmd.Flags().Changed("plain-http") {
		c.PlainHTTP = &o.PlainHTTP
	}
	if o.Own {
		c.Source = &packagesv1.BundleSource{Registry: o.Registry, Repository: o.Repository}
	} else {
		c.Registry, c.Repository = o.Registry, o.Repository
	}
	o.controller = c
	return o.clientOptions.Complete(cmd, args)
}

// Validate checks that --password-env names a password and --cluster-source a whole source.
func (o *InstallPackageControllerOptions) Validate() error {
	if o.PasswordEnv != "" && o.controller.Password == "" {
		return fmt.Errorf("--password-env %s: the variable is empty or not set", o.PasswordEnv)
	}
	if o.Own && (o.Registry == "" || o.Repository == "") {
		return errors.New("--cluster-source needs --registry and --repository")
	}
	return nil
}

// Run writes the defaults and creates the PBC.
func (o *InstallPackageControllerOptions) Run(ctx context.Context) error {
	pbc, err := o.client.InstallPackageController(ctx, o.global.Kubeconfig, o.controller)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(o.Out, "PackageBundleController %s/%s ready to read bundles (see `flotilla get packagebundlecontrollers`)\n", pbc.Namespace, pbc.Name)
	return err
}
