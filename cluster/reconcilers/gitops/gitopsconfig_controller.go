package gitops

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	gitopsrepo "github.com/flotilla-dev/flotilla/cluster/gitops"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// FieldOwner is the server-side apply field manager of everything the reconciler applies from
// Git.
const FieldOwner = "flotilla-gitops-controller"

// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=gitopsconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=gitopsconfigs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.flotilla.dev,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler syncs GitOpsConfigs: it pulls the branch every spec.interval and applies the
// cluster specs that changed in it.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client ctrlclient.Client

	// ClientAs returns a client that acts as the applier of a namespace (ApplierUser): the
	// specs of a GitOpsConfig are applied with it, never with Client.
	ClientAs func(namespace string) (ctrlclient.Client, error)

	// APIReader reads the credentials Secret straight from the API server, so that Secrets
	// are never cached.
	APIReader ctrlclient.Reader

	// Recorder records Events on GitOpsConfigs.
	Recorder events.EventRecorder

	// CacheDir holds the bare repositories that URLs are fetched into, one per management
	// cluster and GitOpsConfig: <CacheDir>/<management>/<namespace>/<name>. Repositories given
	// by path are read in place.
	CacheDir string
	// MaxConcurrentReconciles bounds how many GitOpsConfigs sync at once; 0 means
	// DefaultMaxConcurrentReconciles. A Git server that does not answer holds up only the syncs
	// of its own GitOpsConfigs, each for at most its spec.timeout.
	MaxConcurrentReconciles int
}

// DefaultMaxConcurrentReconciles is how many GitOpsConfigs sync at once by default.
const DefaultMaxConcurrentReconciles = 4

// SetupWithManager registers the reconciler with mgr. Besides GitOpsConfigs it watches
// management Clusters, so that a sync resumes as soon as a management cluster appears or is
// unpaused.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	switch {
	case r.Client == nil:
		return errors.New("gitops reconciler: Client is required")
	case r.ClientAs == nil:
		return errors.New("gitops reconciler: ClientAs is required")
	case r.APIReader == nil:
		return errors.New("gitops reconciler: APIReader is required")
	case r.Recorder == nil:
		return errors.New("gitops reconciler: Recorder is required")
	case r.CacheDir == "":
		return errors.New("gitops reconciler: CacheDir is required")
	}
	changed := predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})
	isManagement := predicate.NewPredicateFuncs(func(obj ctrlclient.Object) bool {
		c, ok := obj.(*flotillav1.Cluster)
		return ok && c.Spec.Management
	})
	concurrency := r.MaxConcurrentReconciles
	if concurrency <= 0 {
		concurrency = DefaultMaxConcurrentReconciles
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("flotilla-gitopsconfig").
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		For(&flotillav1.GitOpsConfig{}, builder.WithPredicates(changed)).
		Watches(&flotillav1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.allConfigs),
			builder.WithPredicates(isManagement, changed)).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the gitops reconciler: %w", err)
	}
	return nil
}

// Reconcile syncs one GitOpsConfig: it finds the management cluster whose directory to read,
// stands aside while that cluster is paused or moving, pulls the branch, and applies the specs
// that changed since the last applied commit. It always comes back after spec.interval.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	config := &flotillav1.GitOpsConfig{}
	if err := r.Client.Get(ctx, req.NamespacedName, config); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	if !config.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	s := &scope{config: config, statusBase: config.Status.DeepCopy(), patch: objectpatch.New(r.Client, config)}
	defer func() {
		if err := r.patchStatus(ctx, s); err != nil {
			reterr = errors.Join(reterr, err)
		}
	}()
	next := ctrl.Result{RequeueAfter: interval(config)}

	if annotations.HasPaused(config) {
		s.paused = fmt.Sprintf("the GitOpsConfig has the %s annotation", clusterv1.PausedAnnotation)
		return next, nil
	}
	if err := r.findManagement(ctx, s); err != nil || s.management == nil || s.paused != "" {
		return next, err
	}
	phases := []func(context.Context, *scope) error{
		r.pull,
		r.load,
		r.applyChanged,
	}
	for _, phase := range phases {
		err := phase(ctx, s)
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: objectpatch.ConflictRetry}, nil
		}
		if err != nil {
			// The condition, a Warning Event and the log say what failed (once, while the
			// failure repeats); the next pull retries.
			s.failure = err.Error()
			return next, nil
		}
	}
	return next, nil
}

// interval is how often config pulls; DefaultGitOpsInterval when unset.
func interval(config *flotillav1.GitOpsConfig) time.Duration {
	if d := config.Spec.Interval.Duration; d > 0 {
		return d
	}
	d, _ := time.ParseDuration(flotillav1.DefaultGitOpsInterval)
	return d
}

// scope holds what one sync learns. Phases fill it in; setStatus reads it.
type scope struct {
	config *flotillav1.GitOpsConfig
	// statusBase is the status as read.
	statusBase *flotillav1.GitOpsConfigStatus
	// patch writes the status back.
	patch *objectpatch.Patch

	// management is the management Cluster whose directory is synced; nil while there is none.
	management *flotillav1.Cluster
	// waiting says why no management cluster was chosen.
	waiting string
	// paused says why the sync stands aside; empty when it does not.
	paused string

	// repo is the branch to pull; snapshot what was pulled.
	repo     gitopsrepo.Repository
	snapshot *gitopsrepo.Snapshot
	// specs are this config's cluster specs of the snapshot, parsed.
	specs []parsedSpec
	// applied lists the specs this sync applied (changed since the last applied commit).
	applied []string
	// synced is set once every spec of the snapshot is applied.
	synced bool
	// failure says what went wrong; empty when nothing did.
	failure string
}

// patchStatus computes the status from the scope, records an Event for what happened, and
// writes the status when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, s *scope) error {
	setStatus(s)
	r.recordEvents(ctx, s)
	return s.patch.Write(ctx)
}

// allConfigs maps a management Cluster to every GitOpsConfig: which of them sync its
// directory is decided by each reconcile.
func (r *Reconciler) allConfigs(ctx context.Context, _ ctrlclient.Object) []reconcile.Request {
	configs := &flotillav1.GitOpsConfigList{}
	if err := r.Client.List(ctx, configs); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing GitOpsConfigs to map a management Cluster to")
		return nil
	}
	requests := make([]reconcile.Request, 0, len(configs.Items))
	for i := range configs.Items {
		requests = append(requests, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(&configs.Items[i])})
	}
	return requests
}
