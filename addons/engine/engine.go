package engine

import (
	"context"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
)

// ErrReleaseNotFound is wrapped by Get's error when the release is not installed.
var ErrReleaseNotFound = errors.New("release not found")

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

// Chart names a chart and where it comes from.
type Chart struct {
	// RepoURL is oci://host/path or an http(s):// classic repository.
	RepoURL string
	// Name of the chart.
	Name string
	// Version is an exact version, a semver range, or "" for the latest.
	Version string
}

// Registry holds credentials and transport settings of the chart's repository.
type Registry struct {
	Username, Password    string
	CAData                []byte
	InsecureSkipTLSVerify bool
	PlainHTTP             bool
}

// Release is one release to install.
type Release struct {
	Name, Namespace string
	Chart           Chart
	Registry        Registry
	Values          map[string]any
	CreateNamespace bool
	Wait            bool
	Atomic          bool
	SkipCRDs        bool
	Timeout         time.Duration
	MaxHistory      int
	// Labels are stored on the Helm release.
	Labels map[string]string
}

// Action is what InstallOrUpgrade did.
type Action string

// Actions of InstallOrUpgrade.
const (
	Installed Action = "Installed"
	Upgraded  Action = "Upgraded"
	Unchanged Action = "Unchanged"
)

// Result is the outcome of InstallOrUpgrade.
type Result struct {
	Action       Action
	Revision     int
	Status       string
	ChartVersion string
}

// InstalledRelease is an installed release as Get reads it.
type InstalledRelease struct {
	Revision     int
	Status       string
	ChartVersion string
	// Manifest is the rendered manifest of the release's current revision.
	Manifest string
	// Objects are the manifest's objects, as the manifest declares them (not as they live in
	// the cluster).
	Objects []*unstructured.Unstructured
}
