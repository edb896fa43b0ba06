package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/client-go/rest"

	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// New returns the Engine backed by Flotilla's one Helm engine.
func New(e *helm.Engine) Engine {
	return helmEngine{e: e}
}

// helmEngine adapts *helm.Engine to Engine; it translates types and nothing else.
type helmEngine struct{ e *helm.Engine }

func toHelm(r Release) helm.Release {
	return helm.Release{
		Name:      r.Name,
		Namespace: r.Namespace,
		Chart:     helm.ChartRef{RepoURL: r.Chart.RepoURL, Name: r.Chart.Name, Version: r.Chart.Version},
		Registry: helm.Registry{
			Username: r.Registry.Username, Password: r.Registry.Password, CAData: r.Registry.CAData,
			InsecureSkipTLSVerify: r.Registry.InsecureSkipTLSVerify, PlainHTTP: r.Registry.PlainHTTP,
		},
		Values:          r.Values,
		CreateNamespace: r.CreateNamespace,
		Wait:            r.Wait,
		Atomic:          r.Atomic,
		SkipCRDs:        r.SkipCRDs,
		Timeout:         r.Timeout,
		MaxHistory:      r.MaxHistory,
		Labels:          r.Labels,
	}
}

func (h helmEngine) InstallOrUpgrade(ctx context.Context, cfg *rest.Config, r Release) (Result, error) {
	res, err := h.e.InstallOrUpgrade(ctx, cfg, toHelm(r))
	if err != nil {
		return Result{}, err
	}
	return Result{Action: Action(res.Action), Revision: res.Revision, Status: res.Status, ChartVersion: res.ChartVersion}, nil
}

func (h helmEngine) Uninstall(ctx context.Context, cfg *rest.Config, name, namespace string) error {
	return h.e.Uninstall(ctx, cfg, name, namespace)
}

func (h helmEngine) Get(ctx context.Context, cfg *rest.Config, name, namespace string) (*InstalledRelease, error) {
	in, err := h.e.Get(ctx, cfg, name, namespace)
	if errors.Is(err, helm.ErrReleaseNotFound) {
		return nil, fmt.Errorf("%w: %w", ErrReleaseNotFound, err)
	}
	if err != nil {
		return nil, err
	}
	return &InstalledRelease{
		Revision: in.Revision, Status: in.Status, ChartVersion: in.ChartVersion,
		Manifest: in.Manifest, Objects: in.Objects,
	}, nil
}

func (h helmEngine) Diff(ctx context.Context, cfg *rest.Config, r Release) (string, error) {
	return h.e.Diff(ctx, cfg, toHelm(r))
}

func (h helmEngine) Rollback(ctx context.Context, cfg *rest.Config, name, namespace string, revision int) error {
	return h.e.Rollback(ctx, cfg, name, namespace, revision)
}

// HelmFieldManager is the server-side apply field manager Helm writes a release's objects as:
// helm's kube.ManagedFieldsManager when set, else the program's base name (as Helm decides).
// Drift correction restores fields as this manager, so later upgrades own them without
// conflicts.
func HelmFieldManager() string {
	if kube.ManagedFieldsManager != "" {
		return kube.ManagedFieldsManager
	}
	if len(os.Args) == 0 || os.Args[0] == "" {
		return "unknown"
	}
	return filepath.Base(os.Args[0])
}
