package client

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/addons/caaph"
	"github.com/flotilla-dev/flotilla/addons/desired"
)

// ImportedAddon is one CAAPH HelmChartProxy ImportFromCAAPH converted.
type ImportedAddon struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// ReleaseName and ReleaseNamespace are the release adopted in every cluster.
	ReleaseName      string `json:"releaseName"`
	ReleaseNamespace string `json:"releaseNamespace"`
	// Action is "created", "exists" (a Flotilla proxy of that name was there: left alone) or
	// "would create" (dry run).
	Action   string   `json:"action"`
	Warnings []string `json:"warnings,omitempty"`
}

// ImportFromCAAPH writes a Flotilla HelmChartProxy for each CAAPH HelmChartProxy in namespace
// (every namespace when empty) of the management cluster behind kubeconfig, which adopts the
// releases CAAPH installed (package addons/caaph). Nothing is written with dryRun. CAAPH's
// objects are left alone: see docs/addons.md for deleting them with their releases orphaned.
// Every proxy converts before any is written.
func (c *Client) ImportFromCAAPH(ctx context.Context, kubeconfig, namespace string, dryRun bool) ([]ImportedAddon, error) {
	kc, err := c.addonsManagementCluster(ctx, kubeconfig)
	if err != nil {
		return nil, err
	}
	proxies := &unstructured.UnstructuredList{}
	proxies.SetGroupVersionKind(caaph.HelmChartProxyList)
	if err := kc.List(ctx, proxies, ctrlclient.InNamespace(namespace)); err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("the management cluster has no CAAPH HelmChartProxies (addons.cluster.x-k8s.io/v1alpha1): nothing to import")
		}
		return nil, fmt.Errorf("listing CAAPH HelmChartProxies: %w", err)
	}
	sort.Slice(proxies.Items, func(i, j int) bool {
		a, b := proxies.Items[i], proxies.Items[j]
		return a.GetNamespace()+"/"+a.GetName() < b.GetNamespace()+"/"+b.GetName()
	})
	converted := make([]caaph.Converted, 0, len(proxies.Items))
	for i := range proxies.Items {
		p := &proxies.Items[i]
		releases := &unstructured.UnstructuredList{}
		releases.SetGroupVersionKind(caaph.HelmReleaseProxyList)
		if err := kc.List(ctx, releases, ctrlclient.InNamespace(p.GetNamespace()), ctrlclient.MatchingLabels{caaph.ProxyNameLabel: p.GetName()}); err != nil {
			return nil, fmt.Errorf("listing the CAAPH HelmReleaseProxies of %s/%s: %w", p.GetNamespace(), p.GetName(), err)
		}
		cv, err := caaph.Convert(p, releases.Items)
		if err != nil {
			return nil, err
		}
		converted = append(converted, cv)
	}
	imported := make([]ImportedAddon, 0, len(converted))
	for _, cv := range converted {
		p := cv.Proxy
		a := ImportedAddon{Namespace: p.Namespace, Name: p.Name, ReleaseName: p.Spec.ReleaseName, ReleaseNamespace: p.Spec.Namespace,
			Action: "created", Warnings: cv.Warnings}
		if a.ReleaseName == "" {
			a.ReleaseName = p.Name
		}
		if a.ReleaseNamespace == "" {
			a.ReleaseNamespace = desired.DefaultReleaseNamespace
		}
		switch err := kc.Create(ctx, p, dryRunOption(dryRun)...); {
		case apierrors.IsAlreadyExists(err):
			a.Action = "exists"
		case err != nil:
			return imported, fmt.Errorf("creating HelmChartProxy %s/%s: %w", p.Namespace, p.Name, err)
		case dryRun:
			a.Action = "would create"
		}
		imported = append(imported, a)
	}
	return imported, nil
}

// dryRunOption is the server-side dry run option when dryRun is set.
func dryRunOption(dryRun bool) []ctrlclient.CreateOption {
	if dryRun {
		return []ctrlclient.CreateOption{ctrlclient.DryRunAll}
	}
	return nil
}
