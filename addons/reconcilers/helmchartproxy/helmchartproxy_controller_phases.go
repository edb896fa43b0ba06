package helmchartproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/flotilla-dev/flotilla/addons/desired"
	"github.com/flotilla-dev/flotilla/addons/values"
	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// renderRetry is how soon a proxy renders again after a render that did not run to its end for
// a reason outside the template (values.RenderAgain): the machine was too busy, or the render
// worker was lost.
const renderRetry = 5 * time.Second

// Event reasons.
const (
	templateFailedEvent = "TemplateError"
	deleteFailedEvent   = "DeleteFailed"
	applyFailedEvent    = "ApplyFailed"
)

// selectClusters lists the Clusters of the proxy's namespace that the selector matches and that
// are not being deleted or torn down (the teardown annotation: Flotilla deletes the Cluster once
// its releases are uninstalled).
func (r *Reconciler) selectClusters(ctx context.Context, s *scope) error {
	hcp := s.proxy
	selector, err := metav1.LabelSelectorAsSelector(&hcp.Spec.ClusterSelector)
	if err != nil {
		s.invalid = fmt.Errorf("spec.clusterSelector: %w", err)
		return reconcile.TerminalError(s.invalid)
	}
	list := &clusterv1.ClusterList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(hcp.Namespace), ctrlclient.MatchingLabelsSelector{Selector: selector}); err != nil {
		return fmt.Errorf("listing Clusters: %w", err)
	}
	s.clusters = map[string]*clusterv1.Cluster{}
	for i := range list.Items {
		c := &list.Items[i]
		if c.DeletionTimestamp.IsZero() && !metav1.HasAnnotation(c.ObjectMeta, flotillav1.TeardownAnnotation) {
			s.clusters[c.Name] = c
		}
	}
	s.observed = true
	return nil
}

// listReleaseProxies finds the proxy's HelmReleaseProxies by their label.
func (r *Reconciler) listReleaseProxies(ctx context.Context, s *scope) error {
	list := &addonsv1.HelmReleaseProxyList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(s.proxy.Namespace),
		ctrlclient.MatchingLabels{addonsv1.HelmChartProxyNameLabel: s.proxy.Name}); err != nil {
		return fmt.Errorf("listing HelmReleaseProxies: %w", err)
	}
	s.releaseProxies = map[string]*addonsv1.HelmReleaseProxy{}
	for i := range list.Items {
		hrp := &list.Items[i]
		s.releaseProxies[hrp.Spec.ClusterName] = hrp
	}
	return nil
}

// applyReleaseProxies renders the values for every selected, unpaused cluster and applies its
// HelmReleaseProxy: all at once, or batch by batch when spec.rollout is set. A cluster whose
// template fails keeps its HelmReleaseProxy as it is.
func (r *Reconciler) applyReleaseProxies(ctx context.Context, s *scope) error {
	hcp := s.proxy
	proxies := map[string]*addonsv1.HelmReleaseProxy{}
	for _, name := range sortedKeys(s.clusters) {
		cluster := s.clusters[name]
		if clusterPaused(cluster) {
			continue
		}
		rendered, err := desired.Render(ctx, r.Client, r.Client.RESTMapper(), hcp, cluster)
		if values.RenderAgain(err) {
			s.requeueAfter = min(s.requeueAfter, renderRetry) // the template may well be fine
		}
		if err != nil {
			s.renderErrors[name] = err
			r.Recorder.Eventf(hcp, cluster, corev1.EventTypeWarning, templateFailedEvent, "Render", "Cluster %s: %v", name, err)
			continue
		}
		proxies[name] = desired.ReleaseProxy(hcp, cluster, rendered)
	}
	if hcp.Spec.Rollout != nil {
		return r.rollout(ctx, s, proxies)
	}
	hcp.Status.Rollout = nil
	for _, name := range sortedKeys(proxies) {
		if err := r.applyReleaseProxy(ctx, s, name, proxies[name]); err != nil {
			return err
		}
	}
	return nil
}

// applyReleaseProxy applies the HelmReleaseProxy of cluster and records it in the scope. One
// that already is as desired is not written (a proxy reconciles on every status change of its
// HelmReleaseProxies).
func (r *Reconciler) applyReleaseProxy(ctx context.Context, s *scope, cluster string, hrp *addonsv1.HelmReleaseProxy) error {
	if have := s.releaseProxies[cluster]; have != nil && asDesired(have, hrp) {
		return nil
	}
	if err := r.apply(ctx, hrp); err != nil {
		if !apierrors.IsConflict(err) {
			r.Recorder.Eventf(s.proxy, nil, corev1.EventTypeWarning, applyFailedEvent, "Apply", "Applying HelmReleaseProxy %s: %v", hrp.Name, err)
		}
		return err
	}
	s.releaseProxies[cluster] = hrp
	return nil
}

// apply server-side applies hrp as FieldOwner; on success hrp holds what the API server
// returned.
func (r *Reconciler) apply(ctx context.Context, hrp *addonsv1.HelmReleaseProxy) error {
	raw, err := json.Marshal(hrp)
	if err != nil {
		return fmt.Errorf("encoding HelmReleaseProxy %s: %w", hrp.Name, err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return fmt.Errorf("decoding HelmReleaseProxy %s: %w", hrp.Name, err)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	if err := r.Client.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner(FieldOwner), ctrlclient.ForceOwnership); err != nil {
		return fmt.Errorf("applying HelmReleaseProxy %s: %w", klog.KObj(hrp), err)
	}
	return runtimeFromUnstructured(u, hrp)
}

// deleteUnselected deletes the HelmReleaseProxies of clusters no longer selected, except those
// of paused clusters that still exist. A dry run deletes nothing: that would uninstall.
func (r *Reconciler) deleteUnselected(ctx context.Context, s *scope) error {
	if s.proxy.Spec.DryRun {
		return nil
	}
	for _, name := range sortedKeys(s.releaseProxies) {
		hrp := s.releaseProxies[name]
		if _, selected := s.clusters[name]; selected {
			continue
		}
		cluster := &clusterv1.Cluster{}
		err := r.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: hrp.Namespace, Name: name}, cluster)
		if err == nil && cluster.DeletionTimestamp.IsZero() && clusterPaused(cluster) {
			continue
		}
		if err := r.deleteReleaseProxy(ctx, s, hrp); err != nil {
			return err
		}
		delete(s.releaseProxies, name)
	}
	return nil
}

func (r *Reconciler) deleteReleaseProxy(ctx context.Context, s *scope, hrp *addonsv1.HelmReleaseProxy) error {
	if !hrp.DeletionTimestamp.IsZero() {
		return nil
	}
	ctrl.LoggerFrom(ctx).Info("Deleting HelmReleaseProxy", "helmReleaseProxy", klog.KObj(hrp), "cluster", hrp.Spec.ClusterName)
	if err := r.Client.Delete(ctx, hrp); ctrlclient.IgnoreNotFound(err) != nil {
		r.Recorder.Eventf(s.proxy, hrp, corev1.EventTypeWarning, deleteFailedEvent, "Delete", "Deleting HelmReleaseProxy %s: %v", hrp.Name, err)
		return fmt.Errorf("deleting HelmReleaseProxy %s: %w", klog.KObj(hrp), err)
	}
	return nil
}

// reconcileDelete deletes every HelmReleaseProxy of the proxy and lets the proxy go once they
// are gone.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	s.deleting = true
	if !controllerutil.ContainsFinalizer(s.proxy, addonsv1.HelmChartProxyFinalizer) {
		s.gone = true
		return ctrl.Result{}, nil
	}
	if err := r.listReleaseProxies(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	for _, hrp := range s.releaseProxies {
		if err := r.deleteReleaseProxy(ctx, s, hrp); err != nil {
			return ctrl.Result{}, err
		}
	}
	if s.remaining = len(s.releaseProxies); s.remaining > 0 {
		return ctrl.Result{}, nil // the deletion of each HelmReleaseProxy brings us back
	}
	if err := s.patch.RemoveFinalizer(ctx, addonsv1.HelmChartProxyFinalizer); err != nil {
		return objectpatch.RequeueOnConflict(err, conflictRetry)
	}
	s.gone = true
	return ctrl.Result{}, nil
}

// asDesired: have carries everything want sets (spec, labels, controller, rollback annotation).
func asDesired(have, want *addonsv1.HelmReleaseProxy) bool {
	for k, v := range want.Labels {
		if have.Labels[k] != v {
			return false
		}
	}
	ref := metav1.GetControllerOf(have)
	return have.DeletionTimestamp.IsZero() && ref != nil && ref.UID == want.OwnerReferences[0].UID &&
		have.Annotations[addonsv1.RollbackAnnotation] == want.Annotations[addonsv1.RollbackAnnotation] &&
		sameRelease(have, want)
}

// clusterPaused: the Cluster carries the paused annotation or its spec.paused is true.
func clusterPaused(c *clusterv1.Cluster) bool {
	_, annotated := c.Annotations[clusterv1.PausedAnnotation]
	return annotated || ptr.Deref(c.Spec.Paused, false)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
