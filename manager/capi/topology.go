package capi

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/core/reconcilers/clusterclass"
	"sigs.k8s.io/cluster-api/core/reconcilers/clusterresourceset"
	"sigs.k8s.io/cluster-api/core/reconcilers/clusterresourcesetbinding"
	topologycluster "sigs.k8s.io/cluster-api/core/reconcilers/topology/cluster"
	topologymachinedeployment "sigs.k8s.io/cluster-api/core/reconcilers/topology/machinedeployment"
	topologymachineset "sigs.k8s.io/cluster-api/core/reconcilers/topology/machineset"
	coreadmission "sigs.k8s.io/cluster-api/core/webhooks/admission"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
)

// Concurrency of the topology reconcilers: Cluster API's defaults (core/main.go) for ClusterClass
// and the topology controllers, sized down for one machine like the other core reconcilers.
const (
	clusterClassConcurrency    = 5
	clusterTopologyConcurrency = 10
)

// RBAC of Cluster API's ClusterClass, topology and ClusterResourceSet reconcilers as they run
// here: the ClusterClass reconciler reads every template a class references and writes their
// owner references; the topology controller creates, from those templates, the infrastructure
// cluster, the control plane and the MachineDeployments with their templates, of any provider
// (the provider groups are Cluster API's wildcard, as in its own role: a ClusterClass names
// templates of providers Flotilla did not write); the ClusterResourceSet reconciler reads the
// Secrets and ConfigMaps a set names (metadata cache) and applies them to workload clusters; the
// Cluster topology reconciler watches the runtime SDK's ExtensionConfigs (none run here: without
// the read its cache never syncs, and the component's manager reconciles nothing).
//
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusterclasses;clusterclasses/status,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;clusters/status,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinedeployments;machinesets;machinehealthchecks,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=infrastructure.cluster.x-k8s.io;infrastructure.flotilla.dev;controlplane.cluster.x-k8s.io;controlplane.flotilla.dev;bootstrap.cluster.x-k8s.io,resources=*,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=addons.cluster.x-k8s.io,resources=clusterresourcesets;clusterresourcesets/status;clusterresourcesetbindings;clusterresourcesetbindings/status,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets;configmaps,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
// +kubebuilder:rbac:groups=runtime.cluster.x-k8s.io,resources=extensionconfigs,verbs=get;list;watch

// setupTopology registers what Cluster API needs for ClusterClass clusters (the ClusterTopology
// gate is on: capifeatures.Set) and ClusterResourceSets, wired as its core/main.go wires
// them (without the runtime SDK: no lifecycle hooks, no external patches): the ClusterClass,
// Cluster topology, MachineDeployment topology and MachineSet topology reconcilers, the
// ClusterResourceSet and binding reconcilers, and the ClusterClass and ClusterResourceSet
// webhooks.
func setupTopology(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	partialSecretCache, err := newPartialSecretCache(mgr, opts.SyncPeriod)
	if err != nil {
		return err
	}
	reconcilers := []struct {
		name  string
		setup func() error
	}{
		{"ClusterClass", func() error {
			return (&clusterclass.Reconciler{Client: mgr.GetClient()}).
				SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: clusterClassConcurrency})
		}},
		{"ClusterTopology", func() error {
			return (&topologycluster.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), ClusterCache: opts.ClusterCache}).
				SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: clusterTopologyConcurrency})
		}},
		{"MachineDeploymentTopology", func() error {
			return (&topologymachinedeployment.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).
				SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: concurrency})
		}},
		{"MachineSetTopology", func() error {
			return (&topologymachineset.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).
				SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: concurrency})
		}},
		{"ClusterResourceSet", func() error {
			return (&clusterresourceset.Reconciler{Client: mgr.GetClient(), ClusterCache: opts.ClusterCache}).
				SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: concurrency}, partialSecretCache)
		}},
		{"ClusterResourceSetBinding", func() error {
			return (&clusterresourcesetbinding.Reconciler{Client: mgr.GetClient()}).
				SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: concurrency})
		}},
	}
	for _, r := range reconcilers {
		if err := r.setup(); err != nil {
			return fmt.Errorf("setting up the Cluster API %s controller: %w", r.name, err)
		}
	}

	webhooks := []struct {
		name  string
		setup func(ctrl.Manager) error
	}{
		{"ClusterClass", (&coreadmission.ClusterClass{Client: mgr.GetClient()}).SetupWebhookWithManager},
		{"ClusterResourceSet", (&coreadmission.ClusterResourceSet{}).SetupWebhookWithManager},
		{"ClusterResourceSetBinding", (&coreadmission.ClusterResourceSetBinding{}).SetupWebhookWithManager},
	}
	for _, w := range webhooks {
		if err := w.setup(mgr); err != nil {
			return fmt.Errorf("setting up the Cluster API %s webhook: %w", w.name, err)
		}
	}
	return nil
}

// newPartialSecretCache is the cache the ClusterResourceSet reconciler watches Secrets through:
// metadata only, of every Secret (the manager's own cache keeps only those labelled with a
// cluster name), with managed fields stripped, as Cluster API's core/main.go builds it.
func newPartialSecretCache(mgr ctrl.Manager, syncPeriod time.Duration) (ctrlcache.Cache, error) {
	c, err := ctrlcache.New(mgr.GetConfig(), ctrlcache.Options{
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		HTTPClient: mgr.GetHTTPClient(),
		SyncPeriod: ptr.To(syncPeriod),
		DefaultTransform: func(in any) (any, error) {
			obj, ok := in.(*metav1.PartialObjectMetadata)
			if !ok || obj.GetObjectKind().GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("Secret") {
				return nil, fmt.Errorf("the partial Secret cache got %T, want Secret metadata", in)
			}
			return ctrlcache.TransformStripManagedFields()(obj)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the metadata cache of Secrets: %w", err)
	}
	if err := mgr.Add(c); err != nil {
		return nil, fmt.Errorf("adding the metadata cache of Secrets: %w", err)
	}
	return c, nil
}
