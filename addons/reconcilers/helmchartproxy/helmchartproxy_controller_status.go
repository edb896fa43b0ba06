package helmchartproxy

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// maxListed bounds how many clusters a condition message names.
const maxListed = 5

// setStatus turns what the reconcile found (the scope) into the proxy's status.
func setStatus(s *scope) {
	hcp := s.proxy
	if !s.paused && !s.deleting {
		hcp.Status.ObservedGeneration = hcp.Generation
	}
	setPaused(hcp, s.paused)
	if s.observed {
		hcp.Status.MatchingClusters = sortedKeys(s.clusters)
		hcp.Status.ReadyClusters = int32(len(readyClusters(s))) //nolint:gosec // bounded by the number of Clusters
		setValuesRendered(hcp, s.renderErrors)
		hcp.Status.Clusters = clusterReleases(s)
	}
	setReady(hcp, s)
}

// readyClusters are the selected clusters whose HelmReleaseProxy is Ready for its current spec.
func readyClusters(s *scope) []string {
	var ready []string
	for _, name := range sortedKeys(s.clusters) {
		if hrp := s.releaseProxies[name]; hrp != nil && releaseReady(hrp) {
			ready = append(ready, name)
		}
	}
	return ready
}

// clusterReleases lists the release of every selected cluster: revision, chart version, Ready.
func clusterReleases(s *scope) []addonsv1.ClusterRelease {
	out := make([]addonsv1.ClusterRelease, 0, len(s.clusters))
	for _, name := range sortedKeys(s.clusters) {
		cr := addonsv1.ClusterRelease{Cluster: name}
		if hrp := s.releaseProxies[name]; hrp != nil {
			cr.Revision, cr.ChartVersion, cr.Ready = hrp.Status.Revision, hrp.Status.ChartVersion, releaseReady(hrp)
		}
		out = append(out, cr)
	}
	return out
}

// releaseReady: the HelmReleaseProxy's Ready condition is True for its current generation.
func releaseReady(hrp *addonsv1.HelmReleaseProxy) bool {
	c := meta.FindStatusCondition(hrp.Status.Conditions, addonsv1.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == hrp.Generation
}

func setPaused(hcp *addonsv1.HelmChartProxy, paused bool) {
	cond := metav1.Condition{Type: addonsv1.PausedCondition, Status: metav1.ConditionFalse, Reason: addonsv1.NotPausedReason, ObservedGeneration: hcp.Generation}
	if paused {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, addonsv1.PausedReason, "the HelmChartProxy carries the cluster.x-k8s.io/paused annotation"
	}
	meta.SetStatusCondition(&hcp.Status.Conditions, cond)
}

// setValuesRendered: True when the template rendered for every selected cluster; otherwise the
// message names the failing clusters with their errors.
func setValuesRendered(hcp *addonsv1.HelmChartProxy, errs map[string]error) {
	cond := metav1.Condition{Type: addonsv1.ValuesRenderedCondition, Status: metav1.ConditionTrue, Reason: addonsv1.ReadyReason, ObservedGeneration: hcp.Generation}
	if len(errs) > 0 {
		names := sortedKeys(errs)
		msgs := make([]string, 0, maxListed)
		for _, n := range names[:min(len(names), maxListed)] {
			msgs = append(msgs, fmt.Sprintf("cluster %s: %v", n, errs[n]))
		}
		if len(names) > maxListed {
			msgs = append(msgs, fmt.Sprintf("and %d more clusters", len(names)-maxListed))
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, addonsv1.TemplateErrorReason, strings.Join(msgs, "; ")
	}
	meta.SetStatusCondition(&hcp.Status.Conditions, cond)
}

// setReady: True when every selected cluster's HelmReleaseProxy is Ready.
func setReady(hcp *addonsv1.HelmChartProxy, s *scope) {
	cond := metav1.Condition{Type: addonsv1.ReadyCondition, Status: metav1.ConditionFalse, ObservedGeneration: hcp.Generation}
	switch {
	case s.paused:
		return
	case s.deleting:
		cond.Reason = addonsv1.DeletingReason
		cond.Message = fmt.Sprintf("waiting for %d HelmReleaseProxies to uninstall their releases", s.remaining)
	case s.invalid != nil:
		cond.Reason, cond.Message = addonsv1.InvalidSelectorReason, s.invalid.Error()
	case !s.observed:
		return
	case len(s.clusters) == 0:
		cond.Reason, cond.Message = addonsv1.NoClustersSelectedReason, "the clusterSelector matches no Cluster in the namespace"
	case hcp.Status.Rollout != nil && (hcp.Status.Rollout.Phase == addonsv1.RolloutFailed || hcp.Status.Rollout.Phase == addonsv1.RolloutRolledBack):
		cond.Reason, cond.Message = addonsv1.RolloutFailedReason, "the rollout "+hcp.Status.Rollout.Message
	case hcp.Status.Rollout != nil && hcp.Status.Rollout.Phase != addonsv1.RolloutComplete:
		cond.Reason = addonsv1.RolloutInProgressReason
		cond.Message = fmt.Sprintf("%d clusters changed so far: %s", len(hcp.Status.Rollout.Updated), hcp.Status.Rollout.Message)
	default:
		ready := readyClusters(s)
		if len(ready) == len(s.clusters) {
			cond.Status, cond.Reason = metav1.ConditionTrue, addonsv1.ReadyReason
			cond.Message = fmt.Sprintf("the release is Ready in all %d selected clusters", len(ready))
			break
		}
		var waiting []string
		for _, name := range sortedKeys(s.clusters) {
			if hrp := s.releaseProxies[name]; hrp == nil || !releaseReady(hrp) {
				waiting = append(waiting, notReadyMessage(name, hrp))
			}
		}
		if len(waiting) > maxListed {
			waiting = append(waiting[:maxListed], fmt.Sprintf("and %d more", len(waiting)-maxListed))
		}
		cond.Reason = addonsv1.ReleasesNotReadyReason
		cond.Message = fmt.Sprintf("%d of %d clusters not Ready: %s", len(s.clusters)-len(ready), len(s.clusters), strings.Join(waiting, "; "))
	}
	meta.SetStatusCondition(&hcp.Status.Conditions, cond)
}

// notReadyMessage says why a cluster's release is not Ready.
func notReadyMessage(cluster string, hrp *addonsv1.HelmReleaseProxy) string {
	if hrp == nil {
		return cluster + ": no HelmReleaseProxy yet"
	}
	c := meta.FindStatusCondition(hrp.Status.Conditions, addonsv1.ReadyCondition)
	if c == nil || c.ObservedGeneration != hrp.Generation {
		return cluster + ": installing"
	}
	return fmt.Sprintf("%s: %s: %s", cluster, c.Reason, c.Message)
}

func runtimeFromUnstructured(u *unstructured.Unstructured, obj any) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
		return fmt.Errorf("decoding the applied object: %w", err)
	}
	return nil
}
