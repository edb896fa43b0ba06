package client

import (
	"context"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/addons/desired"
	"github.com/flotilla-dev/flotilla/addons/engine"
	"github.com/flotilla-dev/flotilla/addons/values"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// Addons are the HelmChartProxies of a management cluster with their HelmReleaseProxies.
type Addons struct {
	Proxies  []addonsv1.HelmChartProxy
	Releases []addonsv1.HelmReleaseProxy
}

// GetAddons lists the HelmChartProxies and HelmReleaseProxies of the management cluster behind
// kubeconfig, in namespace ("" for every namespace), sorted by namespace and name.
func (c *Client) GetAddons(ctx context.Context, kubeconfig, namespace string) (*Addons, error) {
	kc, err := c.addonsManagementCluster(ctx, kubeconfig)
	if err != nil {
		return nil, err
	}
	proxies := &addonsv1.HelmChartProxyList{}
	if err := kc.List(ctx, proxies, ctrlclient.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing HelmChartProxies: %w", err)
	}
	releases := &addonsv1.HelmReleaseProxyList{}
	if err := kc.List(ctx, releases, ctrlclient.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing HelmReleaseProxies: %w", err)
	}
	sort.Slice(proxies.Items, func(i, j int) bool {
		a, b := proxies.Items[i], proxies.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	sort.Slice(releases.Items, func(i, j int) bool {
		a, b := releases.Items[i], releases.Items[j]
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return &Addons{Proxies: proxies.Items, Releases: releases.Items}, nil
}

// ClusterDiff is what a HelmChartProxy would change in one cluster.
type ClusterDiff struct {
	// Cluster is the CAPI Cluster's name.
	Cluster string
	// Diff is the unified diff from the installed manifest to the one the proxy would install;
	// "" when nothing would change.
	Diff string
	// Err is why the diff could not be made for this cluster.
	Err error
}

// DiffAddon renders the HelmChartProxy namespace/name for every Cluster it selects, exactly as
// the manager would (values template, valuesFrom, chart), and diffs it against the release
// installed in each cluster, reached through the cluster's kubeconfig Secret. It changes nothing.
func (c *Client) DiffAddon(ctx context.Context, kubeconfig, namespace, name string) ([]ClusterDiff, error) {
	kc, err := c.addonsManagementCluster(ctx, kubeconfig)
	if err != nil {
		return nil, err
	}
	hcp := &addonsv1.HelmChartProxy{}
	if err := kc.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, hcp); err != nil {
		return nil, fmt.Errorf("reading HelmChartProxy %s/%s: %w", namespace, name, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(&hcp.Spec.ClusterSelector)
	if err != nil {
		return nil, fmt.Errorf("HelmChartProxy %s/%s: spec.clusterSelector: %w", namespace, name, err)
	}
	clusters := &clusterv1.ClusterList{}
	if err := kc.List(ctx, clusters, ctrlclient.InNamespace(namespace), ctrlclient.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("listing Clusters: %w", err)
	}
	sort.Slice(clusters.Items, func(i, j int) bool { return clusters.Items[i].Name < clusters.Items[j].Name })
	// The charts' templates render in bounded workers, as in the manager.
	eng := &helm.Engine{ChartCache: helm.ChartCacheDir(c.Home), Renderer: values.ChartRenderer{}}
	diffs := make([]ClusterDiff, 0, len(clusters.Items))
	for i := range clusters.Items {
		cluster := &clusters.Items[i]
		diff, err := c.diffCluster(ctx, kc, eng, hcp, cluster)
		diffs = append(diffs, ClusterDiff{Cluster: cluster.Name, Diff: diff, Err: err})
	}
	return diffs, nil
}

func (c *Client) diffCluster(ctx context.Context, kc ctrlclient.Client, eng engine.Engine, hcp *addonsv1.HelmChartProxy, cluster *clusterv1.Cluster) (string, error) {
	rendered, err := desired.Render(ctx, kc, kc.RESTMapper(), hcp, cluster)
	if err != nil {
		return "", err
	}
	hrp := desired.ReleaseProxy(hcp, cluster, rendered)
	release, _, err := desired.Release(ctx, kc, hrp)
	if err != nil {
		return "", err
	}
	data, err := GetKubeconfig(ctx, kc, cluster.Namespace, cluster.Name)
	if err != nil {
		return "", err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return "", fmt.Errorf("reading the kubeconfig of cluster %s: %w", cluster.Name, err)
	}
	return eng.Diff(ctx, cfg, release)
}

// addonsManagementCluster connects to the management cluster; the addons commands need
// --kubeconfig.
func (c *Client) addonsManagementCluster(ctx context.Context, kubeconfig string) (ctrlclient.Client, error) {
	if kubeconfig == "" {
		return nil, fmt.Errorf("pass --kubeconfig of the management cluster whose addons to show")
	}
	return c.ReadManagementCluster(ctx, kubeconfig, "")
}
