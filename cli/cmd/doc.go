// Package cmd holds flotilla's cobra commands, one file per command (<verb>_<noun>.go); a group
// command's file holds its subcommands too (addons_diff.go, dev.go, registry.go). root.go builds
// the tree; options.go holds the global options and the -o helpers, printer.go the output of get
// and list commands, packages_common.go what the packages commands share.
//
// Each command is built by a NewXCmd(streams, ...) constructor around an options struct whose Run
// does the work, mostly by calling the library in cli/client, cli/spec or cli/workflow and
// printing what it returns; the registry commands also call packages/bundle and pkg/ociregistry
// themselves. Some commands fill in their arguments in Complete and check their flags in
// Validate, which RunE calls before Run; the others check their input in Run. There are no package-level
// command or flag variables and no init(): NewRootCmd builds a fresh tree, so tests run commands
// in-process with their own streams.
//
// Every command inherits the global flags of GlobalOptions (--kubeconfig, --home, --bin-dir,
// -v), which the root completes (paths made absolute) and turns into a logger in the command's
// context before the command runs. Output goes to the injected streams; -o json|yaml where a
// kubectl user would expect it (AddOutputFlag, PrintStructured).
package cmd
