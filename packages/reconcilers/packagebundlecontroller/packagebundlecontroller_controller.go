package packagebundlecontroller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/defaults"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// FieldOwner names the reconciler in managed fields and events.
const FieldOwner = "flotilla-packagebundlecontroller"

// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packagebundlecontrollers,verbs=get;list;watch;patch;update
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packagebundlecontrollers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packagebundles,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packagebundles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=flotilla-packages,resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles PackageBundleControllers.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client ctrlclient.Client
	// Recorder records Events on PackageBundleControllers.
	Recorder events.EventRecorder
	// APIReader reads the package-defaults ConfigMap and credentials Secret from the API server
	// (never a cache that may lag behind the watch event that asked for the read); Client when nil.
	APIReader ctrlclient.Reader
	// Source reads bundles from registries.
	Source BundleSource
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// RegistryTimeout bounds one check of a source; 30 s when zero.
	RegistryTimeout time.Duration
}

// SetupWithManager registers the reconciler with mgr. It watches PackageBundleControllers
// (spec and annotation changes), the package-defaults ConfigMap and PackageBundles (every PBC)
// and Flotilla Clusters (the PBC of the same name: the Kubernetes minor may change).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	switch {
	case r.Client == nil:
		return errors.New("packagebundlecontroller reconciler: Client is required")
	case r.Recorder == nil:
		return errors.New("packagebundlecontroller reconciler: Recorder is required")
	case r.Source == nil:
		return errors.New("packagebundlecontroller reconciler: Source is required")
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("packagebundlecontroller").
		For(&packagesv1.PackageBundleController{}, builder.WithPredicates(
			predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Metadata only: every change bumps the resourceVersion, and the data is read from the
		// API server (the manager's client does not cache ConfigMaps).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.allPBCs), builder.OnlyMetadata,
			builder.WithPredicates(predicate.NewPredicateFuncs(isDefaults))).
		Watches(&flotillav1.Cluster{}, handler.EnqueueRequestsFromMapFunc(pbcOfCluster)).
		// A bundle this or another PBC recorded: the cache may not have held it when the PBC's
		// state was computed.
		Watches(&packagesv1.PackageBundle{}, handler.EnqueueRequestsFromMapFunc(r.allPBCs)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the packagebundlecontroller reconciler: %w", err)
	}
	return nil
}

// scope is what one reconcile learns.
type scope struct {
	pbc *packagesv1.PackageBundleController
	// statusBase is the status as read.
	statusBase *packagesv1.PackageBundleControllerStatus
	// patch writes the PackageBundleController back: spec.activeBundle and the status.
	patch *objectpatch.Patch

	// ignored says why the PBC belongs to no cluster; empty when it does.
	ignored string
	// cluster is the Flotilla Cluster of the PBC's name.
	cluster *flotillav1.Cluster
	// minor is the cluster's Kubernetes minor.
	minor string
	// source is the source in effect; nil when none is configured.
	source *packagesv1.BundleSource
	// mirror is the registry mirror the source is read through (spec.registryMirror, else the
	// management cluster's); nil when none is set.
	mirror *registryconn.Mirror
	// checked is set when this reconcile read the source; checkErr when that failed.
	checked  bool
	checkErr error
	// bundles are the valid PackageBundles for minor, oldest first; invalid counts the others.
	bundles []*packagesv1.PackageBundle
	invalid int
	// active is the PackageBundle spec.activeBundle names; nil when missing.
	active *packagesv1.PackageBundle
}

// Reconcile checks the PBC's source when due and reports the PBC's state.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	pbc := &packagesv1.PackageBundleController{}
	if err := r.Client.Get(ctx, req.NamespacedName, pbc); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !pbc.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	s := &scope{pbc: pbc, statusBase: pbc.Status.DeepCopy(), patch: objectpatch.New(r.Client, pbc)}
	defer func() {
		if err := r.patchStatus(ctx, s); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()

	if err := r.findCluster(ctx, s); err != nil || s.ignored != "" {
		return ctrl.Result{}, err
	}
	d, err := defaults.Read(ctx, r.APIReader)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.source = pbc.Spec.Source
	if s.source == nil {
		s.source = d.Source
	}
	if s.mirror, err = defaults.MirrorOf(ctx, r.APIReader, pbc); err != nil {
		// Reported like an unreachable source; retried with backoff, as the mirror
		// ConfigMap and Secrets are not watched.
		s.checked, s.checkErr = true, err
		return ctrl.Result{}, err
	}
	if s.source == nil {
		// Waiting for the defaults ConfigMap (watched) or a spec.source.
		return ctrl.Result{}, nil
	}

	if due, _ := r.checkDue(s); due {
		s.checked = true
		// spec.logLevel raises what is logged about this cluster's checks.
		ctrl.LoggerFrom(ctx).V(max(0, 1-int(pbc.Spec.LogLevel))).Info("Checking the bundle source",
			"source", s.source.Registry+"/"+s.source.Repository, "kubernetesMinor", s.minor)
		if err := r.check(ctx, s, d); err != nil {
			var regErr *RegistryError
			if !errors.As(err, &regErr) {
				s.checked = false // an API error: not the registry's fault
				return ctrl.Result{}, err
			}
			s.checkErr = err
			r.Recorder.Eventf(pbc, nil, corev1.EventTypeWarning, packagesv1.RegistryUnreachableReason, "Check", "%v", err)
			// Returned for the controller's exponential backoff.
			return ctrl.Result{}, err
		}
	}
	if err := r.observeBundles(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.setActiveBundle(ctx, s); err != nil {
		return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
	}
	_, wait := r.checkDue(s)
	return ctrl.Result{RequeueAfter: wait}, nil
}

// patchStatus writes the status the setters compute from s, when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	setStatus(s, r.now())
	return s.patch.Write(ctx)
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func isDefaults(obj ctrlclient.Object) bool {
	return obj.GetNamespace() == defaults.Key.Namespace && obj.GetName() == defaults.Key.Name
}

// allPBCs maps the defaults ConfigMap or a PackageBundle to every PackageBundleController.
func (r *Reconciler) allPBCs(ctx context.Context, _ ctrlclient.Object) []reconcile.Request {
	list := &packagesv1.PackageBundleControllerList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(packagesv1.PackagesNamespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing PackageBundleControllers")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}

// pbcOfCluster maps a Flotilla Cluster to the PackageBundleController of its name.
func pbcOfCluster(_ context.Context, obj ctrlclient.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: obj.GetName()}}}
}
