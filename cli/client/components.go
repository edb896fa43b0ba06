package client

import (
	"context"
	"fmt"
	"runtime/debug"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/pkg/version"
)

// InstallComponents makes the cluster behind c able to hold Flotilla and Cluster API objects:
// the CRDs, the ClusterRole flotilla-cluster-creator for users who are not admins (with public
// read access to the Flotilla version), the flotilla-system namespace and the clusterctl provider
// inventory (which clusterctl move checks on both clusters, as `clusterctl init` would have
// written it).
// It starts no controller. Re-running it changes nothing.
func InstallComponents(ctx context.Context, c ctrlclient.Client) error {
	if err := config.Install(ctx, c); err != nil {
		return fmt.Errorf("installing CRDs: %w", err)
	}
	if err := config.InstallClusterCreatorRBAC(ctx, c); err != nil {
		return fmt.Errorf("installing the flotilla-cluster-creator role: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: flotillav1.SystemNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", flotillav1.SystemNamespace, err)
	}
	for _, p := range inventory() {
		existing := &clusterctlv1.Provider{}
		err := c.Get(ctx, ctrlclient.ObjectKeyFromObject(p), existing)
		switch {
		case apierrors.IsNotFound(err):
			if err := c.Create(ctx, p); err != nil {
				return fmt.Errorf("registering provider %s: %w", p.Name, err)
			}
		case err != nil:
			return fmt.Errorf("reading provider %s: %w", p.Name, err)
		case existing.Version != p.Version:
			existing.Version = p.Version
			if err := c.Update(ctx, existing); err != nil {
				return fmt.Errorf("updating provider %s: %w", p.Name, err)
			}
		}
	}
	return nil
}

// inventory is the clusterctl provider inventory of a Flotilla management cluster: CAPI's core
// provider and its kubeadm bootstrap and control plane providers, embedded in the manager; the
// local infrastructure and control plane providers; and Cluster API's in-memory infrastructure
// provider, which the manager runs as a process of its own (its CRDs carry the label
// cluster.x-k8s.io/provider=infrastructure-in-memory, which clusterctl matches with this entry).
func inventory() []*clusterctlv1.Provider {
	provider := func(name, providerName string, t clusterctlv1.ProviderType, version string) *clusterctlv1.Provider {
		return &clusterctlv1.Provider{
			ObjectMeta: metav1.ObjectMeta{
				Name:      name,
				Namespace: flotillav1.SystemNamespace,
				Labels: map[string]string{
					clusterctlv1.ClusterctlLabel:     "",
					clusterctlv1.ClusterctlCoreLabel: clusterctlv1.ClusterctlCoreLabelInventoryValue,
				},
			},
			ProviderName: providerName,
			Type:         string(t),
			Version:      version,
		}
	}
	return []*clusterctlv1.Provider{
		provider("cluster-api", "cluster-api", clusterctlv1.CoreProviderType, capiVersion()),
		provider("bootstrap-kubeadm", "kubeadm", clusterctlv1.BootstrapProviderType, capiVersion()),
		provider("control-plane-kubeadm", "kubeadm", clusterctlv1.ControlPlaneProviderType, capiVersion()),
		provider("infrastructure-in-memory", "in-memory", clusterctlv1.InfrastructureProviderType, capiVersion()),
		provider("infrastructure-local", "local", clusterctlv1.InfrastructureProviderType, version.Get().Version),
		provider("control-plane-local", "local", clusterctlv1.ControlPlaneProviderType, version.Get().Version),
	}
}

// capiVersion is the version of the Cluster API module compiled into this binary.
func capiVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "sigs.k8s.io/cluster-api" {
				if dep.Replace != nil {
					return dep.Replace.Version
				}
				return dep.Version
			}
		}
	}
	return "v1.14.2"
}
