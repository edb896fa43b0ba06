package packages

import (
	"context"

	"k8s.io/client-go/rest"

	packagereconciler "github.com/flotilla-dev/flotilla/packages/reconcilers/package"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// HelmInstaller installs Packages with the shared Helm engine.
type HelmInstaller struct {
	Engine *helm.Engine
}

var _ packagereconciler.Installer = HelmInstaller{}

// InstallOrUpgrade installs or upgrades r, creating its namespace.
func (h HelmInstaller) InstallOrUpgrade(ctx context.Context, cfg *rest.Config, r packagereconciler.Release) (packagereconciler.Result, error) {
	res, err := h.Engine.InstallOrUpgrade(ctx, cfg, helm.Release{
		Name:      r.Name,
		Namespace: r.Namespace,
		Chart:     helm.ChartRef{RepoURL: r.Chart.RepoURL, Name: r.Chart.Name, Version: r.Chart.Version, Digest: r.Chart.Digest},
		Registry: helm.Registry{
			Username: r.Registry.Username, Password: r.Registry.Password, CAData: r.Registry.CAData, PlainHTTP: r.Registry.PlainHTTP,
		},
		Values:          r.Values,
		CreateNamespace: true,
		Labels:          r.Labels,
		Timeout:         r.Timeout,
	})
	if err != nil {
		return packagereconciler.Result{}, err
	}
	return packagereconciler.Result{
		Changed:      res.Action != helm.ActionUnchanged,
		Revision:     res.Revision,
		ChartVersion: res.ChartVersion,
	}, nil
}

// Uninstall removes the release; nil when it does not exist.
func (h HelmInstaller) Uninstall(ctx context.Context, cfg *rest.Config, name, namespace string) error {
	return h.Engine.Uninstall(ctx, cfg, name, namespace)
}
