package engine

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// Errors of the engine, which callers tell apart.
var (
	// ErrReleaseNotFound is wrapped by Get's error when the release is not installed.
	ErrReleaseNotFound = helm.ErrReleaseNotFound
	// ErrDigestMismatch is wrapped by the error of a call whose chart does not have the digest
	// it is pinned to (Chart.Digest).
	ErrDigestMismatch = helm.ErrDigestMismatch
)

// Engine installs, reads and removes Helm releases in a cluster.
type Engine interface {
	// InstallOrUpgrade installs r, or upgrades it when it is installed. It writes nothing (no
	// new revision) when the installed release already has the same chart and values.
	InstallOrUpgrade(ctx context.Context, cfg *rest.Config, r Release) (Result, error)
	// Uninstall removes the release; it is nil when the release is not installed.
	Uninstall(ctx context.Context, cfg *rest.Config, name, namespace string) error
	// Get returns the installed release; its error wraps ErrReleaseNotFound when there is none.
	Get(ctx context.Context, cfg *rest.Config, name, namespace string) (*InstalledRelease, error)
	// Diff returns a unified diff between the installed release's manifest and what r would
	// install; "" when they are the same.
	Diff(ctx context.Context, cfg *rest.Config, r Release) (string, error)
	// Rollback rolls the release back to revision.
	Rollback(ctx context.Context, cfg *rest.Config, name, namespace string, revision int) error
}

// The types are pkg/helm's: the interface is its Engine's method set, so *helm.Engine is an
// Engine as it is, and the reconcilers speak the engine's own language.
type (
	// Chart names a chart and where it comes from.
	Chart = helm.ChartRef
	// Release is one release to install.
	Release = helm.Release
	// Action is what InstallOrUpgrade did.
	Action = helm.Action
	// Result is the outcome of InstallOrUpgrade.
	Result = helm.Result
	// InstalledRelease is an installed release as Get reads it.
	InstalledRelease = helm.Installed
)

// Actions of InstallOrUpgrade.
const (
	Installed = helm.ActionInstalled
	Upgraded  = helm.ActionUpgraded
	Unchanged = helm.ActionUnchanged
)

// Flotilla's Helm engine is an Engine.
var _ Engine = (*helm.Engine)(nil)
