package packagereconciler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/catalog"
	"github.com/flotilla-dev/flotilla/packages/defaults"
	"github.com/flotilla-dev/flotilla/pkg/background"
	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
	"github.com/flotilla-dev/flotilla/pkg/postrender"
	"github.com/flotilla-dev/flotilla/pkg/predelete"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// eventUninstalled is the reason of the Event of an uninstall; an install's or upgrade's is
// the engine's action (Installed, Upgraded).
const eventUninstalled = "Uninstalled"

// ReleaseLabelPackage is stored on the Helm release: the Package's namespace/name.
const ReleaseLabelPackage = "packages.flotilla.dev/package"

// observe reads the Package's cluster, PBC and active bundle into s. A Package outside a
// flotilla-packages-<cluster> namespace is invalid.
func (r *Reconciler) observe(ctx context.Context, s *scope) error {
	p := s.pkg
	name, ok := packagesv1.ClusterFromNamespace(p.Namespace)
	if !ok {
		s.invalid = append(s.invalid, field.Invalid(field.NewPath("metadata", "namespace"), p.Namespace,
			"a Package lives in the namespace "+packagesv1.ClusterNamespacePrefix+"<cluster> of its cluster"))
		return nil
	}
	s.clusterName = name
	pbc := &packagesv1.PackageBundleController{}
	if found, err := r.get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: name}, pbc); err != nil {
		return err
	} else if found {
		s.pbc = pbc
	}
	c, err := r.findCluster(ctx, name, s.pbc)
	if err != nil {
		return err
	}
	s.cluster = c
	if s.pbc == nil {
		return nil
	}
	s.bundle, err = r.bundleOf(ctx, s.pbc)
	return err
}

// findCluster returns the Flotilla Cluster name: in the namespace the PBC's label names, else
// the only one of that name; nil when there is none.
func (r *Reconciler) findCluster(ctx context.Context, name string, pbc *packagesv1.PackageBundleController) (*flotillav1.Cluster, error) {
	if pbc != nil && pbc.Labels[packagesv1.ClusterNamespaceLabel] != "" {
		c := &flotillav1.Cluster{}
		found, err := r.get(ctx, ctrlclient.ObjectKey{Namespace: pbc.Labels[packagesv1.ClusterNamespaceLabel], Name: name}, c)
		if err != nil || !found {
			return nil, err
		}
		return c, nil
	}
	list := &flotillav1.ClusterList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing Clusters: %w", err)
	}
	var found *flotillav1.Cluster
	for i := range list.Items {
		if list.Items[i].Name == name {
			if found != nil {
				return nil, nil // ambiguous: the PBC's label must say which
			}
			found = &list.Items[i]
		}
	}
	return found, nil
}

// resolve resolves the spec in the active bundle; what is missing goes to s.waiting, what is
// wrong to s.invalid.
func (s *scope) resolve() {
	switch {
	case s.pbc == nil:
		s.waitingReason = packagesv1.PackageControllerNotFoundReason
		s.waiting = fmt.Sprintf("waiting for PackageBundleController %s/%s (flotilla install packagecontroller --cluster %s)",
			packagesv1.PackagesNamespace, s.clusterName, s.clusterName)
	case s.pbc.Spec.ActiveBundle == "":
		s.waitingReason = packagesv1.PackageControllerNotFoundReason
		s.waiting = fmt.Sprintf("waiting for PackageBundleController %s to choose an active bundle (%s)", s.clusterName, s.pbc.Status.Detail)
	case s.bundle == nil:
		s.waitingReason = packagesv1.PackageControllerNotFoundReason
		s.waiting = fmt.Sprintf("waiting for PackageBundle %s, the active bundle of %s", s.pbc.Spec.ActiveBundle, s.clusterName)
	case !s.bundle.IsValid():
		s.waitingReason = packagesv1.PackageControllerNotFoundReason
		s.waiting = fmt.Sprintf("the active bundle %s of %s is not valid (%s)", s.bundle.Name, s.clusterName, s.bundle.WhyNotValid())
	default:
		s.resolved, s.invalid = catalog.Resolve(s.bundle, s.pkg.Spec)
	}
}

// ensureDependencies makes sure the Packages of the resolved version's dependencies exist and
// are Ready; it creates the missing ones. While some are not Ready, s.waiting says which.
func (r *Reconciler) ensureDependencies(ctx context.Context, s *scope) error {
	deps := s.resolved.Version.Dependencies
	if len(deps) == 0 {
		return nil
	}
	list := &packagesv1.PackageList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(s.pkg.Namespace)); err != nil {
		return fmt.Errorf("listing Packages of namespace %s: %w", s.pkg.Namespace, err)
	}
	var notReady []string
	for _, dep := range deps {
		var found *packagesv1.Package
		for i := range list.Items {
			if list.Items[i].Spec.PackageName == dep && list.Items[i].Name != s.pkg.Name {
				found = &list.Items[i]
				break
			}
		}
		if found == nil {
			if err := r.createDependency(ctx, s, dep); err != nil {
				return err
			}
			notReady = append(notReady, dep+" (created)")
			continue
		}
		if !dependencyMet(found) {
			notReady = append(notReady, found.Name)
		}
	}
	if len(notReady) > 0 {
		s.waitingReason = packagesv1.WaitingForDependenciesReason
		s.waiting = "waiting for dependencies to be Ready: " + strings.Join(notReady, ", ")
	}
	return nil
}

func (r *Reconciler) createDependency(ctx context.Context, s *scope, dep string) error {
	d := &packagesv1.Package{
		ObjectMeta: metav1.ObjectMeta{Name: dep, Namespace: s.pkg.Namespace, Labels: map[string]string{packagesv1.DependencyOfLabel: s.pkg.Name}},
		Spec:       packagesv1.PackageSpec{PackageName: dep},
	}
	if err := r.Client.Create(ctx, d, ctrlclient.FieldOwner(FieldOwner)); err != nil {
		if apierrors.IsAlreadyExists(err) {
			s.waitingReason = packagesv1.WaitingForDependenciesReason
			s.waiting = fmt.Sprintf("dependency %s cannot be created: Package %s exists for another package", dep, dep)
			return nil
		}
		r.Recorder.Eventf(s.pkg, nil, corev1.EventTypeWarning, "CreateFailed", "Install", "Creating dependency %s: %v", dep, err)
		return fmt.Errorf("creating dependency Package %s/%s: %w", s.pkg.Namespace, dep, err)
	}
	r.Recorder.Eventf(s.pkg, d, corev1.EventTypeNormal, "DependencyCreated", "Install", "Created Package %s, a dependency", dep)
	return nil
}

// dependencyMet says whether a dependency lets its dependents install: it is Ready, or it is
// being upgraded (its release is in the cluster meanwhile, so its dependents need not wait).
func dependencyMet(p *packagesv1.Package) bool {
	if p.Status.State == packagesv1.PackageUpgrading {
		return true
	}
	c := meta.FindStatusCondition(p.Status.Conditions, packagesv1.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == p.Generation
}

// restConfig returns the config of the Package's cluster: the manager's own for a management
// cluster, else one from the cluster cache.
func (r *Reconciler) restConfig(ctx context.Context, s *scope) (*rest.Config, error) {
	c := s.cluster
	if c == nil {
		return nil, fmt.Errorf("no Flotilla Cluster named %s", s.clusterName)
	}
	if c.Spec.Management && r.LocalConfig != nil {
		return r.LocalConfig, nil
	}
	if r.RESTConfigs == nil {
		return nil, fmt.Errorf("cluster %s cannot be reached: no cluster cache", klog.KObj(c))
	}
	cfg, err := r.RESTConfigs.GetRESTConfig(ctx, ctrlclient.ObjectKeyFromObject(c))
	if err != nil {
		return nil, fmt.Errorf("cluster %s cannot be reached: %w", klog.KObj(c), err)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.Timeout == 0 {
		cfg.Timeout = restConfigRequestTimeout
	}
	return cfg, nil
}

// desiredRelease is the Helm release of a resolved Package. Its target namespace is created
// when missing; timeout bounds the Helm action.
func desiredRelease(p *packagesv1.Package, res *catalog.Resolved, d defaults.Defaults, mirror *registryconn.Mirror, timeout time.Duration) helm.Release {
	src := res.Package.Source
	return helm.Release{
		Name:            p.Name,
		Namespace:       targetNamespace(p),
		CreateNamespace: true,
		Timeout:         timeout,
		Chart:           helm.OCIChart(src.Registry, src.Repository, res.Version.Version, res.Version.Digest),
		Registry:        registryconn.Config{Username: d.Username, Password: d.Password, CAData: d.CAData, PlainHTTP: d.PlainHTTP, Mirror: mirror},
		Values:          res.Values,
		PostRender:      postrender.Spec{PostRender: p.Spec.PostRender},
		Labels:          map[string]string{ReleaseLabelPackage: p.Namespace + "." + p.Name},
	}
}

func targetNamespace(p *packagesv1.Package) string {
	if p.Spec.TargetNamespace != "" {
		return p.Spec.TargetNamespace
	}
	return packagesv1.DefaultTargetNamespace
}

// install installs or upgrades the release in the background (pkg/background), bounded by the
// Helm timeout: the reconcile that starts Helm returns at once, showing the Package installing
// or upgrading, and the one the call's end brings records the outcome. One Package whose
// install hangs never holds a worker that another Package needs.
func (r *Reconciler) install(ctx context.Context, s *scope, cfg *rest.Config) (ctrl.Result, error) {
	d, err := defaults.Read(ctx, r.APIReader)
	if err != nil {
		return ctrl.Result{}, err
	}
	mirror, err := defaults.MirrorOf(ctx, r.APIReader, s.pbc)
	if err != nil {
		s.installErr = err
		return ctrl.Result{}, err
	}
	rel := desiredRelease(s.pkg, s.resolved, d, mirror, r.helmTimeout())
	id, err := background.ID("install", rel)
	if err != nil {
		return ctrl.Result{}, err
	}
	s.progress = progress(s.pkg, rel)
	key := ctrlclient.ObjectKeyFromObject(s.pkg)
	res, done, err := background.Do(ctx, &r.calls, key, id, func(ctx context.Context) (helm.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, r.helmTimeout())
		defer cancel()
		return r.Installer.InstallOrUpgrade(ctx, cfg, rel)
	})
	if !done {
		return ctrl.Result{}, nil // the call's end brings the Package back
	}
	if err != nil {
		s.installErr = err
		r.Recorder.Eventf(s.pkg, nil, corev1.EventTypeWarning, packagesv1.InstallFailedReason, "Install",
			"Installing %s %s into cluster %s: %v", s.pkg.Spec.PackageName, s.resolved.Version.Version, s.clusterName, err)
		retry := r.calls.RetryAfter(key)
		ctrl.LoggerFrom(ctx).Error(err, "Installing Package failed", "package", klog.KObj(s.pkg), "retryAfter", retry)
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	s.result = &res
	// The cluster's PackageBundleController's spec.logLevel raises what is logged about it.
	ctrl.LoggerFrom(ctx).V(verbosity(s.pbc, 1)).Info("Release reconciled", "package", klog.KObj(s.pkg), "cluster", s.clusterName,
		"release", rel.Namespace+"/"+rel.Name, "version", res.ChartVersion, "revision", res.Revision, "action", res.Action)
	if res.Action != helm.ActionUnchanged {
		r.Recorder.Eventf(s.pkg, nil, corev1.EventTypeNormal, string(res.Action), "Install", "%s %s %s in cluster %s (namespace %s, revision %d)",
			res.Action, s.pkg.Spec.PackageName, res.ChartVersion, s.clusterName, rel.Namespace, res.Revision)
	}
	return ctrl.Result{}, nil
}

// progress is the state of a Package while Helm installs or upgrades rel: installing when no
// release was ever made, upgrading when the chart digest or values hash the status records from
// the last release differ from rel's, or the last action failed (Helm acts again). It is empty
// when the engine will find the release as it should be and write nothing: a resync.
func progress(p *packagesv1.Package, rel helm.Release) packagesv1.PackageState {
	st := p.Status
	hash, err := helm.InputsHash(rel)
	lastFailed := st.State == packagesv1.PackageFailed && readyReason(p) == packagesv1.InstallFailedReason
	switch {
	case st.CurrentVersion == "":
		return packagesv1.PackageInstalling
	case err != nil || lastFailed || st.ChartDigest != rel.Chart.Digest || st.ValuesHash != hash:
		return packagesv1.PackageUpgrading
	}
	return ""
}

func readyReason(p *packagesv1.Package) string {
	if c := meta.FindStatusCondition(p.Status.Conditions, packagesv1.ReadyCondition); c != nil {
		return c.Reason
	}
	return ""
}

// reconcileDelete uninstalls the release and releases the Package, as predelete.Decide says: a
// Package deleted with its cluster follows spec.uninstallOnClusterDelete, counted from the
// Cluster's deletion; a Package deleted alone is uninstalled, however long its cluster takes to
// answer; a Package whose Cluster is gone goes with it.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	p := s.pkg
	s.deleting = true
	if !controllerutil.ContainsFinalizer(p, packagesv1.PackageFinalizer) {
		return ctrl.Result{}, nil
	}
	u := predelete.Uninstall{
		Policy:        p.Spec.UninstallOnClusterDelete,
		ClusterGone:   s.cluster == nil,
		TeardownBegan: predelete.TeardownBegan(s.cluster),
		Timeout:       r.UninstallTimeout,
	}
	if d := predelete.Decide(u, time.Now()); d.Action == predelete.LeaveWithCluster {
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, predelete.ReasonLeftWithCluster, "Uninstall",
			"Release %s goes with cluster %s without an uninstall: %s", p.Name, s.clusterName, d.Why)
		return r.release(ctx, s)
	}
	cfg, err := r.restConfig(ctx, s)
	if err == nil {
		_, done, uerr := background.Do(ctx, &r.calls, ctrlclient.ObjectKeyFromObject(p), "uninstall", func(ctx context.Context) (struct{}, error) {
			ctx, cancel := context.WithTimeout(ctx, r.helmTimeout())
			defer cancel()
			return struct{}{}, r.Installer.Uninstall(ctx, cfg, p.Name, targetNamespace(p))
		})
		if !done {
			return ctrl.Result{}, nil // the call's end brings the Package back
		}
		if uerr != nil {
			s.installErr = uerr
			r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, "UninstallFailed", "Uninstall", "Uninstalling %s from cluster %s: %v", p.Name, s.clusterName, uerr)
		}
	} else {
		s.unreachable = err
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, packagesv1.ClusterUnreachableReason, "Uninstall", "%v", err)
	}
	u.Tried, u.Err = true, errors.Join(err, s.installErr)
	d := predelete.Decide(u, time.Now())
	switch d.Action {
	case predelete.Uninstalled:
		r.Recorder.Eventf(p, nil, corev1.EventTypeNormal, eventUninstalled, "Uninstall", "Uninstalled %s from cluster %s", p.Name, s.clusterName)
		return r.release(ctx, s)
	case predelete.GiveUp:
		r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, predelete.ReasonOrphaned, "Uninstall",
			"Release %s is left in cluster %s: %s: %v", p.Name, s.clusterName, d.Why, u.Err)
		return r.release(ctx, s)
	}
	retry := r.calls.RetryAfter(ctrlclient.ObjectKeyFromObject(p))
	if s.unreachable == nil {
		ctrl.LoggerFrom(ctx).Error(u.Err, "Uninstalling Package failed", "package", klog.KObj(p), "retryAfter", retry)
	} else {
		retry = r.unreachableRetry() // waiting for the cluster
	}
	if d.Remaining > 0 {
		retry = min(retry, d.Remaining)
	}
	return ctrl.Result{RequeueAfter: retry}, nil
}

// release removes the Package's finalizer: it may go.
func (r *Reconciler) release(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := s.patch.RemoveFinalizer(ctx, packagesv1.PackageFinalizer); err != nil {
		return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
	}
	s.gone = true
	return ctrl.Result{}, nil
}

// verbosity is the log level of a message normally logged at level for the cluster of pbc:
// its spec.logLevel lowers it, down to 0 (always logged).
func verbosity(pbc *packagesv1.PackageBundleController, level int) int {
	if pbc == nil {
		return level
	}
	return max(0, level-int(pbc.Spec.LogLevel))
}

// get reads key into obj, reporting whether it exists.
func (r *Reconciler) get(ctx context.Context, key ctrlclient.ObjectKey, obj ctrlclient.Object) (bool, error) {
	if err := r.Client.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return true, nil
}
