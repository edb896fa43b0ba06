package helmreleaseproxy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// waitingForDependencies says which dependency of hrp is not Ready in its cluster yet ("" when
// all are): the HelmReleaseProxy of each HelmChartProxy in spec.dependsOn for the same cluster
// must exist and be Ready for its current generation.
func (r *Reconciler) waitingForDependencies(ctx context.Context, hrp *addonsv1.HelmReleaseProxy) (string, error) {
	if len(hrp.Spec.DependsOn) == 0 {
		return "", nil
	}
	list := &addonsv1.HelmReleaseProxyList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(hrp.Namespace),
		ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: hrp.Spec.ClusterName}); err != nil {
		return "", fmt.Errorf("listing the HelmReleaseProxies of cluster %s: %w", hrp.Spec.ClusterName, err)
	}
	for _, dep := range hrp.Spec.DependsOn {
		i := slices.IndexFunc(list.Items, func(o addonsv1.HelmReleaseProxy) bool {
			return o.Labels[addonsv1.HelmChartProxyNameLabel] == dep
		})
		if i < 0 {
			return fmt.Sprintf("waiting for HelmChartProxy %s to select cluster %s and install its release there", dep, hrp.Spec.ClusterName), nil
		}
		c := meta.FindStatusCondition(list.Items[i].Status.Conditions, addonsv1.ReadyCondition)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != list.Items[i].Generation {
			why := "not reconciled yet"
			if c != nil {
				why = c.Reason + ": " + c.Message
			}
			return fmt.Sprintf("waiting for the release of HelmChartProxy %s in cluster %s to be Ready (%s)", dep, hrp.Spec.ClusterName, why), nil
		}
	}
	return "", nil
}

// waitingForDependents says which releases of hrp's cluster that depend on hrp's release are
// still installed ("" when none is): a release is uninstalled only after those depending on it,
// in each cluster.
func (r *Reconciler) waitingForDependents(ctx context.Context, hrp *addonsv1.HelmReleaseProxy) (string, error) {
	proxy := hrp.Labels[addonsv1.HelmChartProxyNameLabel]
	list := &addonsv1.HelmReleaseProxyList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(hrp.Namespace),
		ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: hrp.Spec.ClusterName}); err != nil {
		return "", fmt.Errorf("listing the HelmReleaseProxies of cluster %s: %w", hrp.Spec.ClusterName, err)
	}
	var dependents []string
	for i := range list.Items {
		if o := &list.Items[i]; slices.Contains(o.Spec.DependsOn, proxy) && o.Status.Installed != nil {
			dependents = append(dependents, o.Labels[addonsv1.HelmChartProxyNameLabel])
		}
	}
	if len(dependents) == 0 {
		return "", nil
	}
	slices.Sort(dependents)
	return fmt.Sprintf("uninstalling after the releases that depend on this one in cluster %s: those of HelmChartProxy %s",
		hrp.Spec.ClusterName, strings.Join(dependents, ", ")), nil
}

// related maps a HelmReleaseProxy to those of the same cluster that wait for it: the ones whose
// dependsOn names its HelmChartProxy (they install once it is Ready) and, while it is being
// deleted, the ones its dependsOn names (they uninstall once it is gone).
func (r *Reconciler) related(ctx context.Context, obj ctrlclient.Object) []reconcile.Request {
	proxy := obj.GetLabels()[addonsv1.HelmChartProxyNameLabel]
	cluster := obj.GetLabels()[clusterv1.ClusterNameLabel]
	hrp, ok := obj.(*addonsv1.HelmReleaseProxy)
	if proxy == "" || cluster == "" || !ok {
		return nil
	}
	list := &addonsv1.HelmReleaseProxyList{}
	if err := r.Client.List(ctx, list, ctrlclient.InNamespace(obj.GetNamespace()), ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: cluster}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing HelmReleaseProxies to find related ones", "helmReleaseProxy", klog.KObj(obj))
		return nil
	}
	deleting := !hrp.DeletionTimestamp.IsZero()
	var requests []reconcile.Request
	for i := range list.Items {
		o := &list.Items[i]
		if slices.Contains(o.Spec.DependsOn, proxy) || (deleting && slices.Contains(hrp.Spec.DependsOn, o.Labels[addonsv1.HelmChartProxyNameLabel])) {
			requests = append(requests, reconcile.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(o)})
		}
	}
	return requests
}
