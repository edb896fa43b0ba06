package kubeadm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/flotilla-dev/flotilla/pkg/capifeatures"

	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/reconcilers/kubeadmconfig"
	bootstrapadmission "sigs.k8s.io/cluster-api/bootstrap/kubeadm/webhooks/admission"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/controlplane/kubeadm/reconcilers/kubeadmcontrolplane"
	controlplaneadmission "sigs.k8s.io/cluster-api/controlplane/kubeadm/webhooks/admission"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/flotilla-dev/flotilla/manager/capi"
)

// Settings of Cluster API's kubeadm bootstrap and control plane reconcilers: their own defaults
// (bootstrap/kubeadm/main.go, controlplane/kubeadm/main.go).
const (
	tokenTTL        = kubeadmconfig.DefaultTokenTTL
	etcdDialTimeout = 10 * time.Second
	etcdCallTimeout = 15 * time.Second
	concurrency     = 10
)

// RBAC that the kubeadm reconcilers need on Flotilla's provider kinds, besides the rules of
// their own markers (generated into the same role, see hack/rbacgen): KubeadmControlPlane
// creates each control plane Machine's PacketMachine from the PacketMachineTemplate it names,
// sets the template's owner reference, and deletes the PacketMachine with its Machine. Cluster
// API names the provider groups it knows by wildcard (infrastructure.cluster.x-k8s.io).
//
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetmachines,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetmachinetemplates,verbs=get;list;watch;update;patch

// Options configure the "kubeadm" component.
type Options struct {
	// ClusterCache reaches workload clusters (required).
	ClusterCache clustercache.ClusterCache
}

// Setup registers Cluster API's kubeadm providers with mgr, used by the Packet provider's
// clusters and by ClusterClasses whose control plane is kubeadm's (Cluster API's in-memory
// provider's is): the KubeadmConfig reconciler (bootstrap: the kubeadm token and the cloud-init
// that runs kubeadm init or join, in each Machine's bootstrap data Secret) and the
// KubeadmControlPlane reconciler (the CA and other certificate Secrets, the <cluster>-kubeconfig
// admin kubeconfig, control plane Machines), and their admission webhooks, which default and
// validate what Cluster API's topology controller makes from a ClusterClass's templates.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if opts.ClusterCache == nil {
		return errors.New("setting up the kubeadm providers: ClusterCache is required")
	}
	if err := capifeatures.Set(); err != nil {
		return err
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
		ClusterCache:        opts.ClusterCache,
		TokenTTL:            tokenTTL,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: concurrency}); err != nil {
		return fmt.Errorf("setting up the KubeadmConfig controller: %w", err)
	}
	if err := (&kubeadmcontrolplane.Reconciler{
		Client:                      mgr.GetClient(),
		APIReader:                   mgr.GetAPIReader(),
		SecretCachingClient:         secretCachingClient,
		ClusterCache:                opts.ClusterCache,
		EtcdDialTimeout:             etcdDialTimeout,
		EtcdCallTimeout:             etcdCallTimeout,
		RemoteConditionsGracePeriod: capi.RemoteConditionsGracePeriod,
	}).SetupWithManager(ctx, mgr, controller.Options{
		MaxConcurrentReconciles: concurrency,
		// KubeadmControlPlane talks to every etcd member; Cluster API gives it more time.
		ReconciliationTimeout: 3 * time.Minute,
	}); err != nil {
		return fmt.Errorf("setting up the KubeadmControlPlane controller: %w", err)
	}
	webhooks := []struct {
		name  string
		setup func(ctrl.Manager) error
	}{
		{"KubeadmConfig", (&bootstrapadmission.KubeadmConfig{}).SetupWebhookWithManager},
		{"KubeadmConfigTemplate", (&bootstrapadmission.KubeadmConfigTemplate{}).SetupWebhookWithManager},
		{"KubeadmControlPlane", (&controlplaneadmission.KubeadmControlPlane{}).SetupWebhookWithManager},
		{"KubeadmControlPlane scale", (&controlplaneadmission.ScaleValidator{Client: mgr.GetClient()}).SetupWebhookWithManager},
		{"KubeadmControlPlaneTemplate", (&controlplaneadmission.KubeadmControlPlaneTemplate{}).SetupWebhookWithManager},
	}
	for _, w := range webhooks {
		if err := w.setup(mgr); err != nil {
			return fmt.Errorf("setting up the %s webhook: %w", w.name, err)
		}
	}
	return nil
}
