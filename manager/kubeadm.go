package manager

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/reconcilers/kubeadmconfig"
	"sigs.k8s.io/cluster-api/controlplane/kubeadm/reconcilers/kubeadmcontrolplane"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// Settings of Cluster API's kubeadm bootstrap and control plane reconcilers: their own defaults
// (bootstrap/kubeadm/main.go, controlplane/kubeadm/main.go).
const (
	kubeadmTokenTTL        = kubeadmconfig.DefaultTokenTTL
	kubeadmEtcdDialTimeout = 10 * time.Second
	kubeadmEtcdCallTimeout = 15 * time.Second
	kubeadmConcurrency     = 10
)

// kubeadmComponents returns the "kubeadm" component.
func kubeadmComponents() []Component {
	return []Component{{Name: "kubeadm", Setup: setupKubeadm}}
}

// setupKubeadm registers Cluster API's kubeadm providers, used by the Packet provider's
// clusters: the KubeadmConfig reconciler (bootstrap: the kubeadm token and the cloud-init that
// runs kubeadm init or join, in each Machine's bootstrap data Secret) and the KubeadmControlPlane
// reconciler (the CA and other certificate Secrets, the <cluster>-kubeconfig admin kubeconfig,
// control plane Machines). Their admission webhooks are not served: Flotilla builds these
// objects with every field the webhooks would default set explicitly.
func setupKubeadm(ctx context.Context, mgr ctrl.Manager, deps Deps) error {
	if deps.ClusterCache == nil {
		return fmt.Errorf("setting up the kubeadm providers: ClusterCache is required")
	}
	// The manager's cache keeps the data of kubeconfig Secrets only (the core's cache options),
	// while the kubeadm providers read certificate Secrets (<cluster>-ca, -etcd, -sa, -proxy)
	// through their "secret caching client". They get an uncached client instead: a few more
	// reads, and never a certificate Secret without its data.
	secretCachingClient, err := client.New(mgr.GetConfig(), client.Options{Scheme: mgr.GetScheme(), HTTPClient: mgr.GetHTTPClient()})
	if err != nil {
		return fmt.Errorf("setting up the kubeadm providers: %w", err)
	}
	if err := (&kubeadmconfig.Reconciler{
		Client:              mgr.GetClient(),
		SecretCachingClient: secretCachingClient,
		APIReader:           mgr.GetAPIReader(),
		ClusterCache:        deps.ClusterCache,
		TokenTTL:            kubeadmTokenTTL,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: kubeadmConcurrency}); err != nil {
		return fmt.Errorf("setting up the KubeadmConfig controller: %w", err)
	}
	if err := (&kubeadmcontrolplane.Reconciler{
		Client:                      mgr.GetClient(),
		APIReader:                   mgr.GetAPIReader(),
		SecretCachingClient:         secretCachingClient,
		ClusterCache:                deps.ClusterCache,
		EtcdDialTimeout:             kubeadmEtcdDialTimeout,
		EtcdCallTimeout:             kubeadmEtcdCallTimeout,
		RemoteConditionsGracePeriod: remoteConditionsGracePeriod,
	}).SetupWithManager(ctx, mgr, controller.Options{
		MaxConcurrentReconciles: kubeadmConcurrency,
		// KubeadmControlPlane talks to every etcd member; Cluster API gives it more time.
		ReconciliationTimeout: 3 * time.Minute,
	}); err != nil {
		return fmt.Errorf("setting up the KubeadmControlPlane controller: %w", err)
	}
	return nil
}
