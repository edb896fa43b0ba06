package manager

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/reconcilers/kubeadmconfig"
	"sigs.k8s.io/cluster-api/controlplane/kubeadm/reconcilers/kubeadmcontrolplane"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
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

// RBAC of Cluster API's kubeadm reconcilers, as they run here: the union of the roles of
// bootstrap/kubeadm and controlplane/kubeadm (their config/rbac), with the infrastructure group
// named as Flotilla's providers use it, instead of Cluster API's wildcards, and without what
// our wiring does not run (CRD migration, the runtime SDK, metrics authentication).
// The KubeadmConfig reconciler writes bootstrap data and token Secrets, the KubeadmControlPlane
// reconciler certificate and kubeconfig Secrets; both read the CRDs for contract versions.
// KubeadmControlPlane clones each control plane Machine's PacketMachine from its template.
//
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="";events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=kubeadmconfigs;kubeadmconfigs/status;kubeadmconfigs/finalizers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=kubeadmconfigtemplates,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kubeadmcontrolplanes;kubeadmcontrolplanes/status;kubeadmcontrolplanes/finalizers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status;machinepools;machinepools/status;machinesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines;machines/status,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetmachines,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetmachinetemplates,verbs=get;list;watch;update;patch

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
	secretCachingClient, err := ctrlclient.New(mgr.GetConfig(), ctrlclient.Options{Scheme: mgr.GetScheme(), HTTPClient: mgr.GetHTTPClient()})
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
