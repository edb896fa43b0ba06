package packagebundle

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/defaults"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// FieldOwner names the reconciler in managed fields and events.
const FieldOwner = "flotilla-packagebundle-controller"

// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packagebundles,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packagebundlecontrollers,verbs=get;list;watch
// +kubebuilder:rbac:groups=packages.flotilla.dev,resources=packagebundles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=flotilla-packages,resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Verifier checks a bundle's signature and shape. packages/bundle does it.
type Verifier interface {
	// Verify returns nil when b's spec.signature is key's signature of b's canonical content and
	// the bundle is well formed; otherwise an error that says what is wrong.
	Verify(b *packagesv1.PackageBundle, key *ecdsa.PublicKey) error
}

// Reconciler reconciles PackageBundles.
type Reconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	Client ctrlclient.Client
	// Recorder records Events on PackageBundles.
	Recorder events.EventRecorder
	// APIReader reads the package-defaults ConfigMap and credentials Secret from the API server
	// (never a cache that may lag behind the watch event that asked for the read); Client when nil.
	APIReader ctrlclient.Reader
	// Verifier verifies signatures.
	Verifier Verifier
}

// SetupWithManager registers the reconciler with mgr: PackageBundles (spec changes; a new or
// deleted bundle re-examines every bundle, as it may push another out of the history), the
// package-defaults ConfigMap (every bundle: the key or the history may have changed) and the
// active bundles of PackageBundleControllers (every bundle).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.APIReader == nil {
		r.APIReader = r.Client
	}
	switch {
	case r.Client == nil:
		return errors.New("packagebundle reconciler: Client is required")
	case r.Recorder == nil:
		return errors.New("packagebundle reconciler: Recorder is required")
	case r.Verifier == nil:
		return errors.New("packagebundle reconciler: Verifier is required")
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("packagebundle").
		For(&packagesv1.PackageBundle{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Metadata only: every change bumps the resourceVersion, and the data is read from the
		// API server (the manager's client does not cache ConfigMaps).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.allBundles), builder.OnlyMetadata,
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o ctrlclient.Object) bool {
				return ctrlclient.ObjectKeyFromObject(o) == defaults.Key
			}))).
		Watches(&packagesv1.PackageBundle{}, handler.EnqueueRequestsFromMapFunc(r.allBundles),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		Watches(&packagesv1.PackageBundleController{}, handler.EnqueueRequestsFromMapFunc(r.allBundles),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
	if err != nil {
		return fmt.Errorf("setting up the packagebundle reconciler: %w", err)
	}
	return nil
}

// Reconcile verifies one bundle and records the verdict.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &packagesv1.PackageBundle{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, ctrlclient.IgnoreNotFound(err)
	}
	d, err := defaults.Read(ctx, r.APIReader)
	if err != nil {
		return ctrl.Result{}, err
	}
	if collected, err := r.collect(ctx, b, d.BundleHistory); err != nil || collected {
		return ctrl.Result{}, err
	}
	var invalid error
	if d.PublicKey == nil {
		invalid = d.KeyError
	} else {
		invalid = r.Verifier.Verify(b, d.PublicKey)
	}

	patch := objectpatch.New(r.Client, b)
	was := b.Status.State
	SetValidity(b, invalid)
	if err := patch.Write(ctx); err != nil {
		return ctrl.Result{}, err
	}
	wasValid := was == packagesv1.BundleValid
	switch {
	case invalid != nil && (wasValid || was == ""):
		r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, packagesv1.InvalidSignatureReason, "Verify", "Bundle %s is invalid and will not be used: %v", b.Name, invalid)
	case invalid == nil && !wasValid:
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, packagesv1.SignatureVerifiedReason, "Verify", "Bundle %s verified", b.Name)
	}
	return ctrl.Result{}, nil
}

// SetValidity sets a bundle's status from the verdict of its verification (nil: valid).
func SetValidity(b *packagesv1.PackageBundle, invalid error) {
	cond := metav1.Condition{Type: packagesv1.ValidCondition, ObservedGeneration: b.Generation}
	if invalid != nil {
		b.Status.State, b.Status.Detail = packagesv1.BundleInvalid, invalid.Error()
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, packagesv1.InvalidSignatureReason, invalid.Error()
	} else {
		b.Status.State, b.Status.Detail = packagesv1.BundleValid, ""
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, packagesv1.SignatureVerifiedReason, "signature verified"
	}
	meta.SetStatusCondition(&b.Status.Conditions, cond)
}

// allBundles maps the defaults ConfigMap to every PackageBundle.
func (r *Reconciler) allBundles(ctx context.Context, _ ctrlclient.Object) []reconcile.Request {
	list := &packagesv1.PackageBundleList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(packagesv1.PackagesNamespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing PackageBundles")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(&list.Items[i])})
	}
	return reqs
}
