package helmreleaseproxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flotilla-dev/flotilla/addons/desired"
	"github.com/flotilla-dev/flotilla/addons/engine"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/background"
	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
	"github.com/flotilla-dev/flotilla/pkg/predelete"
)

// inputsRetry is how soon a release waiting for its values or credentials tries again.
const inputsRetry = 30 * time.Second

// Event reasons.
const (
	installedEvent      = "Installed"
	upgradedEvent       = "Upgraded"
	uninstalledEvent    = "Uninstalled"
	reinstallingEvent   = "Reinstalling"
	releaseMissingEvent = "ReleaseMissing"
	installFailedEvent  = "InstallFailed"
	uninstallFailed     = "UninstallFailed"
	inputsFailedEvent   = "ValuesError"
)

// reconcileNormal brings the release in the workload cluster in line with the spec.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	hrp := s.hrp
	cluster, err := r.getCluster(ctx, hrp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if cluster == nil {
		s.fail(addonsv1.ClusterNotFoundReason, "Cluster %s does not exist", hrp.Spec.ClusterName)
		return ctrl.Result{}, nil // the Cluster watch brings us back when it appears
	}
	s.cluster = cluster
	if isPaused(hrp, cluster) {
		s.paused = true
		return ctrl.Result{}, nil
	}

	cfg, err := r.ClusterCache.GetRESTConfig(ctx, ctrlclient.ObjectKeyFromObject(cluster))
	if err != nil {
		s.fail(addonsv1.ClusterUnreachableReason, "waiting for cluster %s to be reachable: %v", cluster.Name, err)
		return ctrl.Result{RequeueAfter: unreachableRetry}, nil
	}

	release, valuesHash, err := desired.Release(ctx, r.APIReader, hrp)
	if err != nil {
		var ie *desired.InputError
		if errors.As(err, &ie) {
			s.fail(ie.Reason, "%v", ie.Err)
			r.Recorder.Eventf(hrp, nil, corev1.EventTypeWarning, inputsFailedEvent, "Install", "%v", ie.Err)
			return ctrl.Result{RequeueAfter: inputsRetry}, nil
		}
		return ctrl.Result{}, err
	}
	applied := appliedHash(hrp, valuesHash)

	if rollbackRequested(hrp) {
		return r.rollback(ctx, s, cfg)
	}
	if hrp.Spec.DryRun {
		return r.dryRun(ctx, s, cfg, release)
	}
	hrp.Status.DryRunDiff = ""

	if inst := hrp.Status.Installed; inst != nil && *inst != identity(hrp) {
		if err := r.uninstallForReinstall(ctx, s, cfg, *inst); err != nil {
			return ctrl.Result{}, err
		}
	}

	if hrp.Status.Installed != nil && (installOnce(hrp) || (applied == hrp.Status.AppliedHash && pinned(hrp))) {
		upToDate, err := r.observe(ctx, s, cfg)
		if err != nil {
			return ctrl.Result{}, err
		}
		if upToDate {
			r.watchRelease(ctx, s)
			r.correctDrift(ctx, s, cfg)
			r.checkHealth(ctx, s, cfg)
			return ctrl.Result{RequeueAfter: r.requeueAfter(s)}, nil
		}
	}

	if waiting, err := r.waitingForDependencies(ctx, hrp); err != nil || waiting != "" {
		if waiting != "" {
			s.fail(addonsv1.WaitingForDependenciesReason, "%s", waiting)
		}
		return ctrl.Result{}, err // a dependency's status change brings us back
	}

	return r.install(ctx, s, cfg, release, valuesHash, applied)
}

// install installs or upgrades the release and records the result.
func (r *Reconciler) install(ctx context.Context, s *scope, cfg *rest.Config, release engine.Release, valuesHash, applied string) (ctrl.Result, error) {
	hrp := s.hrp
	id, err := background.ID("install", release)
	if err != nil {
		return ctrl.Result{}, err
	}
	result, done, err := background.Do(ctx, &r.calls, ctrlclient.ObjectKeyFromObject(hrp), id, func(ctx context.Context) (engine.Result, error) {
		return r.Engine.InstallOrUpgrade(ctx, cfg, release)
	})
	if !done {
		// Helm works in the background; its end brings the HelmReleaseProxy back. A release
		// that is what the spec says (a resync) stays Ready meanwhile, and a retry of this
		// generation's failed install keeps showing the failure until it ends.
		upToDate := hrp.Status.Installed != nil && hrp.Status.AppliedHash == applied
		if upToDate || retrying(hrp) {
			s.busy = true
		} else {
			s.fail(addonsv1.InstallingReason, "Helm is installing chart %s %s as release %s/%s", release.Chart.Name, release.Chart.Version, release.Namespace, release.Name)
		}
		return ctrl.Result{}, nil
	}
	if result.Action != engine.Unchanged {
		countAction("install-or-upgrade", err)
	}
	if err != nil {
		s.fail(addonsv1.InstallFailedReason, "%s", installError(err))
		r.Recorder.Eventf(hrp, nil, corev1.EventTypeWarning, installFailedEvent, "Install",
			"Installing release %s/%s (chart %s %s): %s", release.Namespace, release.Name, release.Chart.Name, release.Chart.Version, installError(err))
		retry := r.calls.RetryAfter(ctrlclient.ObjectKeyFromObject(hrp))
		ctrl.LoggerFrom(ctx).Error(err, "Installing release failed", "release", release.Namespace+"/"+release.Name, "retryAfter", retry)
		return ctrl.Result{RequeueAfter: retry}, nil
	}
	if result.Action == engine.Upgraded {
		hrp.Status.PreviousRevision = hrp.Status.Revision
	}
	hrp.Status.AppliedGeneration = hrp.Generation
	hrp.Status.Installed = ptr.To(identity(hrp))
	hrp.Status.Revision = int32(result.Revision) //nolint:gosec // Helm revisions are small
	hrp.Status.ReleaseStatus = result.Status
	hrp.Status.ChartVersion = result.ChartVersion
	hrp.Status.ValuesHash = valuesHash
	hrp.Status.AppliedHash = applied
	switch result.Action {
	case engine.Installed:
		r.Recorder.Eventf(hrp, nil, corev1.EventTypeNormal, installedEvent, "Install",
			"Installed chart %s %s as release %s/%s, revision %d", release.Chart.Name, result.ChartVersion, release.Namespace, release.Name, result.Revision)
	case engine.Upgraded:
		r.Recorder.Eventf(hrp, nil, corev1.EventTypeNormal, upgradedEvent, "Upgrade",
			"Upgraded release %s/%s to chart %s %s, revision %d", release.Namespace, release.Name, release.Chart.Name, result.ChartVersion, result.Revision)
	}
	if result.Status != releaseDeployed {
		s.fail(addonsv1.ReleaseNotDeployedReason, "Helm reports release %s/%s revision %d as %s", release.Namespace, release.Name, result.Revision, result.Status)
	}
	// Tell at once whether the release's workloads are healthy (a rollout waits for that). A
	// release that follows a version range or the latest chart comes this way on every resync,
	// Unchanged: drift is looked for then. Right after an install or upgrade there is none to
	// look for (Helm just applied every object) unless a watch was only now added (what changed
	// since the apply was no event); the next look comes with the next change (the watches), or
	// at the drift interval.
	s.objects, s.objectsKnown = result.Objects, true
	r.watchRelease(ctx, s)
	if result.Action == engine.Unchanged || s.newWatch {
		r.correctDrift(ctx, s, cfg)
	}
	r.checkHealth(ctx, s, cfg)
	return ctrl.Result{RequeueAfter: r.requeueAfter(s)}, nil
}

// maxDryRunDiff bounds status.dryRunDiff.
const maxDryRunDiff = 32 << 10

// dryRun diffs the release against what is installed and records the diff, changing nothing.
func (r *Reconciler) dryRun(ctx context.Context, s *scope, cfg *rest.Config, release engine.Release) (ctrl.Result, error) {
	hrp := s.hrp
	diff, err := r.Engine.Diff(ctx, cfg, release)
	if err != nil {
		s.fail(addonsv1.InstallFailedReason, "dry run: %s", installError(err))
		return ctrl.Result{}, fmt.Errorf("diffing release %s/%s of cluster %s: %w", release.Namespace, release.Name, hrp.Spec.ClusterName, err)
	}
	if len(diff) > maxDryRunDiff {
		diff = diff[:maxDryRunDiff] + "\n... (cut: the diff is longer than 32 KiB; see `flotilla addons diff`)\n"
	}
	hrp.Status.DryRunDiff = diff
	if diff != "" {
		s.fail(addonsv1.DryRunReason, "dry run: the release would change in cluster %s; status.dryRunDiff shows how", hrp.Spec.ClusterName)
	} else if hrp.Status.Installed == nil {
		s.fail(addonsv1.DryRunReason, "dry run: the release is not installed")
	}
	return ctrl.Result{RequeueAfter: r.ResyncInterval}, nil
}

// releaseDeployed is Helm's status of a release that installed or upgraded successfully.
const releaseDeployed = "deployed"

// observe reads the installed release back and records its state. upToDate is true when there
// is nothing to install: the release is there, deployed at the revision last applied (or, for
// InstallOnce, there at all).
func (r *Reconciler) observe(ctx context.Context, s *scope, cfg *rest.Config) (upToDate bool, err error) {
	hrp := s.hrp
	got, err := r.Engine.Get(ctx, cfg, hrp.Spec.ReleaseName, desired.ReleaseNamespace(hrp))
	switch {
	case errors.Is(err, engine.ErrReleaseNotFound):
		r.Recorder.Eventf(hrp, nil, corev1.EventTypeWarning, releaseMissingEvent, "Install",
			"Release %s/%s is missing from cluster %s; installing it again", desired.ReleaseNamespace(hrp), hrp.Spec.ReleaseName, hrp.Spec.ClusterName)
		return false, nil
	case err != nil:
		s.fail(addonsv1.ClusterUnreachableReason, "reading release %s/%s: %v", desired.ReleaseNamespace(hrp), hrp.Spec.ReleaseName, err)
		return false, fmt.Errorf("reading release %s/%s of cluster %s: %w", desired.ReleaseNamespace(hrp), hrp.Spec.ReleaseName, hrp.Spec.ClusterName, err)
	}
	if !installOnce(hrp) && !heldAfterRollback(hrp) && (got.Revision != int(hrp.Status.Revision) || got.Status != releaseDeployed) {
		return false, nil
	}
	s.objects, s.objectsKnown = got.Objects, true
	hrp.Status.Revision = int32(got.Revision) //nolint:gosec // Helm revisions are small
	hrp.Status.ReleaseStatus = got.Status
	hrp.Status.ChartVersion = got.ChartVersion
	if got.Status != releaseDeployed {
		s.fail(addonsv1.ReleaseNotDeployedReason, "Helm reports release %s/%s revision %d as %s", desired.ReleaseNamespace(hrp), hrp.Spec.ReleaseName, got.Revision, got.Status)
	}
	return true, nil
}

// uninstallForReinstall removes the release recorded in status, whose chart, repository, name
// or namespace the spec no longer names.
func (r *Reconciler) uninstallForReinstall(ctx context.Context, s *scope, cfg *rest.Config, inst addonsv1.InstalledRelease) error {
	hrp := s.hrp
	r.Recorder.Eventf(hrp, nil, corev1.EventTypeNormal, reinstallingEvent, "Uninstall",
		"Uninstalling release %s/%s (chart %s from %s) to install chart %s from %s as %s/%s",
		inst.Namespace, inst.ReleaseName, inst.ChartName, inst.RepoURL, hrp.Spec.ChartName, hrp.Spec.RepoURL, desired.ReleaseNamespace(hrp), hrp.Spec.ReleaseName)
	err := r.Engine.Uninstall(ctx, cfg, inst.ReleaseName, inst.Namespace)
	countAction("uninstall", err)
	if err != nil {
		s.fail(addonsv1.UninstallFailedReason, "uninstalling release %s/%s before reinstalling: %v", inst.Namespace, inst.ReleaseName, err)
		r.Recorder.Eventf(hrp, nil, corev1.EventTypeWarning, uninstallFailed, "Uninstall", "Uninstalling release %s/%s: %v", inst.Namespace, inst.ReleaseName, err)
		return fmt.Errorf("uninstalling release %s/%s from cluster %s: %w", inst.Namespace, inst.ReleaseName, hrp.Spec.ClusterName, err)
	}
	r.Recorder.Eventf(hrp, nil, corev1.EventTypeNormal, uninstalledEvent, "Uninstall", "Uninstalled release %s/%s", inst.Namespace, inst.ReleaseName)
	clearRelease(&hrp.Status)
	return nil
}

// reconcileDelete uninstalls the release and removes the finalizer, as predelete.Decide says: a
// release deleted with its cluster (its Flotilla Cluster is being deleted) follows
// spec.uninstallOnClusterDelete, counted from the Cluster's deletion; a release deleted alone is
// orphaned when the cluster stays unreachable past UninstallTimeout after the deletion; a
// release whose CAPI Cluster is gone or being deleted goes with it.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.deleting = true
	hrp := s.hrp
	if !controllerutil.ContainsFinalizer(hrp, addonsv1.HelmReleaseProxyFinalizer) {
		s.gone = true
		return ctrl.Result{}, nil
	}
	inst := hrp.Status.Installed
	if inst == nil {
		return r.removeFinalizer(ctx, s)
	}
	cluster, err := r.getCluster(ctx, hrp)
	if err != nil {
		return ctrl.Result{}, err
	}
	began, err := r.teardownBegan(ctx, hrp)
	if err != nil {
		return ctrl.Result{}, err
	}
	// What happens to the release is told as related to its Cluster too, where
	// `flotilla delete cluster` finds it.
	var related runtime.Object
	if cluster != nil {
		related = cluster
	}
	u := predelete.Uninstall{
		Policy:        hrp.Spec.UninstallOnClusterDelete,
		ClusterGone:   cluster == nil || !cluster.DeletionTimestamp.IsZero(),
		TeardownBegan: began,
		Timeout:       r.UninstallTimeout,
		AloneSince:    hrp.DeletionTimestamp.Time,
	}
	if d := predelete.Decide(u, r.now()); d.Action == predelete.LeaveWithCluster {
		r.Recorder.Eventf(hrp, related, corev1.EventTypeNormal, predelete.ReasonLeftWithCluster, "Uninstall",
			"Release %s/%s goes with cluster %s without an uninstall: %s", inst.Namespace, inst.ReleaseName, hrp.Spec.ClusterName, d.Why)
		return r.removeFinalizer(ctx, s)
	}
	if isPaused(hrp, cluster) {
		s.paused = true
		return ctrl.Result{}, nil
	}
	if waiting, err := r.waitingForDependents(ctx, hrp); err != nil || waiting != "" {
		if waiting != "" {
			s.fail(addonsv1.WaitingForDependentsReason, "%s", waiting)
		}
		return ctrl.Result{}, err // the dependents' deletion brings us back
	}

	reason := addonsv1.ClusterUnreachableReason
	cfg, err := r.ClusterCache.GetRESTConfig(ctx, ctrlclient.ObjectKeyFromObject(cluster))
	if err == nil {
		reason = addonsv1.UninstallFailedReason
		var done bool
		_, done, err = background.Do(ctx, &r.calls, ctrlclient.ObjectKeyFromObject(hrp), "uninstall "+inst.Namespace+"/"+inst.ReleaseName, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, r.Engine.Uninstall(ctx, cfg, inst.ReleaseName, inst.Namespace)
		})
		if !done {
			return ctrl.Result{}, nil // Helm uninstalls in the background; its end brings the HelmReleaseProxy back
		}
		countAction("uninstall", err)
	}
	u.Tried, u.Err = true, err
	d := predelete.Decide(u, r.now())
	switch d.Action {
	case predelete.Uninstalled:
		r.Recorder.Eventf(hrp, related, corev1.EventTypeNormal, uninstalledEvent, "Uninstall", "Uninstalled release %s/%s", inst.Namespace, inst.ReleaseName)
		return r.removeFinalizer(ctx, s)
	case predelete.GiveUp:
		s.orphaned = err
		r.Recorder.Eventf(hrp, related, corev1.EventTypeWarning, predelete.ReasonOrphaned, "Uninstall",
			"Release %s/%s is left in cluster %s: %s: %v", inst.Namespace, inst.ReleaseName, cluster.Name, d.Why, err)
		// The condition is written before the finalizer goes, for whoever watches the object.
		if err := r.patchStatus(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		return r.removeFinalizer(ctx, s)
	}
	// Retry: a release deleted alone or with Ensure, whose tries are bounded (Remaining).
	s.fail(reason, "waiting up to %s for cluster %s to uninstall release %s/%s: %v",
		d.Remaining.Round(time.Second), cluster.Name, inst.Namespace, inst.ReleaseName, err)
	r.Recorder.Eventf(hrp, related, corev1.EventTypeWarning, uninstallFailed, "Uninstall",
		"Uninstalling release %s/%s: %v", inst.Namespace, inst.ReleaseName, err)
	return ctrl.Result{RequeueAfter: min(unreachableRetry, d.Remaining)}, nil
}

// teardownBegan is when the teardown of the HelmReleaseProxy's cluster began: the deletion of the
// Flotilla Cluster of its CAPI Cluster (same namespace and name; predelete.TeardownBegan). It is
// zero for a CAPI Cluster Flotilla does not manage. The Cluster is read from the API server: a
// cache behind the teardown annotation that deleted the HelmReleaseProxy would not show the
// deletion yet.
func (r *Reconciler) teardownBegan(ctx context.Context, hrp *addonsv1.HelmReleaseProxy) (time.Time, error) {
	c := &flotillav1.Cluster{}
	err := r.APIReader.Get(ctx, ctrlclient.ObjectKey{Namespace: hrp.Namespace, Name: hrp.Spec.ClusterName}, c)
	if apierrors.IsNotFound(err) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("reading Flotilla Cluster %s: %w", hrp.Spec.ClusterName, err)
	}
	return predelete.TeardownBegan(c), nil
}

// removeFinalizer lets the HelmReleaseProxy go.
func (r *Reconciler) removeFinalizer(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := s.patch.RemoveFinalizer(ctx, addonsv1.HelmReleaseProxyFinalizer); err != nil {
		return objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
	}
	s.gone = true
	return ctrl.Result{}, nil
}

// getCluster returns the HelmReleaseProxy's Cluster, nil when it does not exist.
func (r *Reconciler) getCluster(ctx context.Context, hrp *addonsv1.HelmReleaseProxy) (*clusterv1.Cluster, error) {
	c := &clusterv1.Cluster{}
	err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: hrp.Namespace, Name: hrp.Spec.ClusterName}, c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading Cluster %s: %w", hrp.Spec.ClusterName, err)
	}
	return c, nil
}

// identity is what, when it changes, makes the release a different release: reinstalled, not
// upgraded.
func identity(hrp *addonsv1.HelmReleaseProxy) addonsv1.InstalledRelease {
	return addonsv1.InstalledRelease{
		ReleaseName: hrp.Spec.ReleaseName,
		Namespace:   desired.ReleaseNamespace(hrp),
		RepoURL:     hrp.Spec.RepoURL,
		ChartName:   hrp.Spec.ChartName,
	}
}

// appliedHash digests everything an install or upgrade is made from.
func appliedHash(hrp *addonsv1.HelmReleaseProxy, valuesHash string) string {
	b, _ := json.Marshal(struct {
		Release    addonsv1.InstalledRelease
		Version    string
		Options    addonsv1.HelmOptions
		ValuesHash string
		// ChartDigest is left out when empty, so that hashes from before the field stay valid.
		ChartDigest string `json:",omitempty"`
	}{identity(hrp), hrp.Spec.Version, hrp.Spec.Options, valuesHash, hrp.Spec.ChartDigest})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// installError is the message of an install, upgrade or diff that failed with err: the
// engine's error, naming the field to fix when the chart is not the one spec.chartDigest pins.
func installError(err error) string {
	if errors.Is(err, engine.ErrDigestMismatch) {
		return fmt.Sprintf("spec.chartDigest: %v: the chart was not installed; set spec.chartDigest to the digest of the chart you mean to run, "+
			"or find out who changed the chart in its repository", err)
	}
	return err.Error()
}

// pinned reports whether the spec names one chart: by digest, or by an exact version.
func pinned(hrp *addonsv1.HelmReleaseProxy) bool {
	return hrp.Spec.ChartDigest != "" || helm.ExactVersion(hrp.Spec.Version)
}

// retrying reports whether the last install or upgrade of the current generation failed.
func retrying(hrp *addonsv1.HelmReleaseProxy) bool {
	c := meta.FindStatusCondition(hrp.Status.Conditions, addonsv1.ReadyCondition)
	return c != nil && c.Reason == addonsv1.InstallFailedReason && c.ObservedGeneration == hrp.Generation
}

func installOnce(hrp *addonsv1.HelmReleaseProxy) bool {
	return hrp.Spec.ReconcileStrategy == addonsv1.ReconcileInstallOnce
}

// isPaused: the HelmReleaseProxy or its Cluster carries the paused annotation, or the Cluster's
// spec.paused is true.
func isPaused(hrp *addonsv1.HelmReleaseProxy, cluster *clusterv1.Cluster) bool {
	_, hrpPaused := hrp.Annotations[clusterv1.PausedAnnotation]
	_, clusterPaused := cluster.Annotations[clusterv1.PausedAnnotation]
	return hrpPaused || clusterPaused || ptr.Deref(cluster.Spec.Paused, false)
}

func clearRelease(st *addonsv1.HelmReleaseProxyStatus) {
	st.Installed = nil
	st.Revision = 0
	st.ReleaseStatus = ""
	st.ChartVersion = ""
	st.ValuesHash = ""
	st.AppliedHash = ""
}
