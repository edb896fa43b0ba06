// Package cmd holds flotilla's cobra commands, one file per command (<verb>_<noun>.go), and
// NewRootCmd, which builds a fresh tree of them. There are no package-level command or flag
// variables and no init(), so tests run commands in-process with their own streams.
//
// # A command
//
// Every command has an options struct that implements Lifecycle (options.go) and a
// NewVerbNounCmd(streams, global) constructor whose RunE is RunE(o):
//
//   - Complete fills in what the flags leave open (arguments, defaults, files the flags name)
//     and builds the client: commands that need cli/client embed clientOptions, whose Complete
//     is the one way a command gets one (with progress on Out or ErrOut, said once in the
//     constructor);
//   - Validate checks the completed options and says what to do instead (commands with -o
//     embed outputOptions, whose Validate checks it);
//   - Run(ctx) calls cli/client (cluster/spec, cli/workflow) and prints.
//
// Commands are thin: what they do to clusters, registries and files happens in cli/client, so
// the end-to-end tests drive exactly what a user runs. Commands that share their flags share
// them through small embedded structs: clusterFileOptions (create and upgrade cluster: -f,
// --output-dir), clusterRefOptions (describe, get kubeconfig, delete cluster: NAME, -n).
//
// Every command inherits the global flags of GlobalOptions (--kubeconfig, --home, --bin-dir,
// -v), which the root completes (paths made absolute) and turns into a logger in the command's
// context before the command runs. Output goes to the injected streams; -o json|yaml where a
// kubectl user would expect it (outputOptions, PrintStructured); lists print through
// listOutput (printer.go).
//
// Nothing here imports the manager or a reconciler (TestTheCLILinksNoController, and depguard's
// "cli" rule): `flotilla manager` is added to the tree by cmd/flotilla, the one package that
// links both.
package cmd
