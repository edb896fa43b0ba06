package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewRootCmd returns the `flotilla` command with every subcommand but `flotilla manager`, which
// cmd/flotilla adds: it is the one command that links the manager, which nothing under cli/
// imports. Output goes to the given streams; main runs it with ExecuteContext and a context that
// a signal cancels.
//
// Adding a command: write cli/cmd/<verb>_<noun>.go with an options struct that implements
// Lifecycle (options.go: Complete, Validate, Run(ctx); embed clientOptions for the client and
// outputOptions for -o) and
//
//	func NewVerbNounCmd(streams genericiooptions.IOStreams, global *GlobalOptions) *cobra.Command
//
// whose RunE is RunE(o) (the global flags are already parsed and completed when it runs), and
// add it below, in the verb group it belongs to. Commands must not set PersistentPreRun(E): the
// root's would then not run.
func NewRootCmd(streams genericiooptions.IOStreams) *cobra.Command {
	global := NewGlobalOptions()
	root := &cobra.Command{
		Use:   "flotilla",
		Short: "Create Kubernetes clusters and manage what runs on them",
		Long: `Flotilla creates, upgrades and deletes Kubernetes clusters through Cluster API, and installs
packages and Helm addons into them.

A management cluster runs Flotilla's controllers and manages itself and workload clusters.
Create one with 'flotilla create cluster -f FILE'; create workload clusters from it with
'flotilla create cluster -f FILE --kubeconfig MGMT.kubeconfig'. Start with a spec:

  flotilla generate clusterconfig mgmt --provider local --management > mgmt.yaml`,
		SilenceUsage:  true, // a failed cluster creation is not a usage error
		SilenceErrors: true, // main prints the error once
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := global.Complete(); err != nil {
				return err
			}
			return setupLogging(cmd, streams.ErrOut, global.Verbosity)
		},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.ErrOut)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%w\nSee '%s --help'", err, cmd.CommandPath())
	})
	global.AddFlags(root.PersistentFlags())

	create := newGroupCmd("create", "Create a cluster")
	create.AddCommand(NewCreateClusterCmd(streams, global))

	upgrade := newGroupCmd("upgrade", "Upgrade or scale a cluster, or move its packages to another bundle")
	upgrade.AddCommand(NewUpgradeClusterCmd(streams, global))
	upgrade.AddCommand(NewUpgradePackagesCmd(streams, global))

	del := newGroupCmd("delete", "Delete a cluster or a package")
	del.AddCommand(NewDeleteClusterCmd(streams, global))
	del.AddCommand(NewDeletePackageCmd(streams, global))

	get := newGroupCmd("get", "Show clusters, kubeconfigs, packages and addons")
	get.AddCommand(NewGetClustersCmd(streams, global), NewGetKubeconfigCmd(streams, global))
	get.AddCommand(NewGetAddonsCmd(streams, global))
	get.AddCommand(NewGetPackagesCmd(streams, global), NewGetPackageBundlesCmd(streams, global), NewGetPackageBundleControllersCmd(streams, global))

	describe := newGroupCmd("describe", "Show a cluster and its parts as a tree, with their conditions")
	describe.AddCommand(NewDescribeClusterCmd(streams, global))

	generate := newGroupCmd("generate", "Print specs to start from")
	generate.AddCommand(NewGenerateClusterConfigCmd(streams))
	generate.AddCommand(NewGeneratePackageCmd(streams, global))

	install := newGroupCmd("install", "Install packages and the package controller")
	install.AddCommand(NewInstallPackageCmd(streams, global), NewInstallPackageControllerCmd(streams, global))

	list := newGroupCmd("list", "List what can be installed")
	list.AddCommand(NewListPackagesCmd(streams, global))

	addGroups(root, create, upgrade, del, get, describe, generate)
	addGroups(root, install, list)
	root.AddCommand(
		NewApplyCmd(streams, global),
		NewVersionCmd(streams),
		NewRegistryCmd(streams, global),
		NewSupervisorCmd(streams, global),
		NewStartCmd(streams, global),
		NewDevCmd(streams, global),
		NewAddonsCmd(streams, global),
		NewPackagesCmd(streams, global),
		NewBinariesCmd(streams, global),
		NewImageCmd(streams, global),
	)

	return root
}

// newGroupCmd returns a verb that only groups nouns, such as `create` for `create cluster`.
// Run without a noun it prints its help; with an unknown one it says so (cobra would print
// the help and succeed).
func newGroupCmd(verb, short string) *cobra.Command {
	return &cobra.Command{
		Use:   verb,
		Short: short,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			var nouns []string
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() {
					nouns = append(nouns, sub.Name())
				}
			}
			return fmt.Errorf("unknown command %q for %q; available: %s", args[0], cmd.CommandPath(), strings.Join(nouns, ", "))
		},
	}
}

// addGroups adds the verb groups that have at least one noun, so that a verb whose commands
// are not wired yet does not show up empty in the help.
func addGroups(root *cobra.Command, groups ...*cobra.Command) {
	for _, g := range groups {
		if g.HasSubCommands() {
			root.AddCommand(g)
		}
	}
}
