// Package cmd holds flotilla's cobra commands, one file per command (<verb>_<noun>.go).
//
// Commands are thin: each has an options struct with Complete (fill in from arguments and
// defaults), Validate (check flags, say what to do instead) and Run (call the library in
// cli/client, cli/spec or cli/workflow and print), and a NewXCmd(streams, ...) constructor that
// wires them into RunE. There are no package-level command or flag variables and no init():
// NewRootCmd builds a fresh tree, so tests run commands in-process with their own streams.
//
// Every command inherits the global flags of GlobalOptions (--kubeconfig, --home, --bin-dir,
// -v), which the root completes (paths made absolute) and turns into a logger in the command's
// context before the command runs. Output goes to the injected streams; -o json|yaml where a
// kubectl user would expect it (AddOutputFlag, PrintStructured).
package cmd
