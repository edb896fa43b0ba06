// Package version reports which build of Flotilla is running.
//
// Release builds stamp the version with the linker:
//
//	go build -ldflags "-X github.com/flotilla-dev/flotilla/pkg/version.gitVersion=v0.1.0 \
//	  -X github.com/flotilla-dev/flotilla/pkg/version.gitCommit=$(git rev-parse HEAD) \
//	  -X github.com/flotilla-dev/flotilla/pkg/version.gitTreeState=clean \
//	  -X github.com/flotilla-dev/flotilla/pkg/version.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
//	  ./cmd/flotilla
//
// Anything not stamped is filled from the build information the Go toolchain embeds in every
// binary (runtime/debug.ReadBuildInfo): the module version when built with `go install
// module@version`, and the VCS revision and time when built inside a git checkout with VCS
// stamping on. What remains unknown is reported as such rather than invented.
//
// # The manager's version record
//
// The manager records its version in the cluster it manages, each time it starts (Record): in
// the ConfigMap flotilla-system/flotilla-version and in a copy in kube-public, which every
// authenticated user may read. The CLI reads it (Recorded, or the public copy) before it acts on
// a management cluster and applies its compatibility rule (cli/client CheckVersions); a manager
// started without a version records Unknown. The names are here, in a package both sides import
// and that imports neither, so that the CLI does not link the manager to learn them.
package version
