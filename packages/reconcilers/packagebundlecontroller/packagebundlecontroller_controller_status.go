package packagebundlecontroller

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// setStatus writes the PBC's status from what the reconcile found. It is pure (now is the
// time of a check that happened) and runs on every path.
func setStatus(s *scope, now time.Time) {
	pbc := s.pbc
	st := &pbc.Status
	st.ObservedGeneration = pbc.Generation
	ready := metav1.Condition{Type: packagesv1.ReadyCondition, Status: metav1.ConditionFalse}
	defer func() {
		ready.ObservedGeneration = pbc.Generation
		meta.SetStatusCondition(&st.Conditions, ready)
	}()

	if s.ignored != "" {
		st.State, st.Detail = packagesv1.BundleControllerIgnored, s.ignored
		ready.Reason, ready.Message = packagesv1.ClusterNotFoundReason, s.ignored
		return
	}
	if s.minor != "" {
		st.KubernetesMinor = s.minor
	}
	if s.source == nil {
		msg := fmt.Sprintf("no bundle source: set spec.source, or registry and repository in ConfigMap %s/%s",
			packagesv1.PackagesNamespace, packagesv1.DefaultsConfigMapName)
		st.State, st.Detail = packagesv1.BundleControllerDisconnected, msg
		ready.Reason, ready.Message = packagesv1.NoSourceReason, msg
		setSourceReachable(pbc, metav1.ConditionFalse, packagesv1.NoSourceReason, msg)
		return
	}
	if s.checked && s.checkErr != nil {
		msg := s.checkErr.Error() + " (retrying with backoff)"
		st.State, st.Detail = packagesv1.BundleControllerDisconnected, msg
		ready.Reason, ready.Message = packagesv1.RegistryUnreachableReason, msg
		setSourceReachable(pbc, metav1.ConditionFalse, packagesv1.RegistryUnreachableReason, msg)
		return
	}
	if s.checked {
		t := metav1.NewTime(now)
		st.LastCheckTime = &t
		st.ObservedCheckRequest = pbc.Annotations[packagesv1.CheckUpgradesAnnotation]
		st.Source = s.source.DeepCopy()
		st.RegistryMirror = mirrorRegistry(s.mirror)
		setSourceReachable(pbc, metav1.ConditionTrue, packagesv1.ReadyReason,
			fmt.Sprintf("read %s/%s", s.source.Registry, s.source.Repository))
	}

	st.Bundles, st.LatestBundle = nil, ""
	for _, b := range s.bundles {
		st.Bundles = append(st.Bundles, b.Name)
	}
	if n := len(s.bundles); n > 0 {
		st.LatestBundle = s.bundles[n-1].Name
	}
	st.State = packagesv1.BundleControllerActive
	active := pbc.Spec.ActiveBundle
	switch {
	case len(s.bundles) == 0 && active == "":
		st.Detail = fmt.Sprintf("no valid bundle for Kubernetes %s in %s/%s", s.minor, s.source.Registry, s.source.Repository)
		if s.invalid > 0 {
			st.Detail += fmt.Sprintf(" (%d invalid)", s.invalid)
		}
		ready.Reason, ready.Message = packagesv1.NoBundleReason, st.Detail
	case s.active == nil:
		st.Detail = fmt.Sprintf("active bundle %s does not exist", active)
		ready.Reason, ready.Message = packagesv1.ActiveBundleInvalidReason, "spec.activeBundle: "+st.Detail
	case !s.active.IsValid():
		st.Detail = fmt.Sprintf("active bundle %s is not valid: %s", active, s.active.WhyNotValid())
		ready.Reason, ready.Message = packagesv1.ActiveBundleInvalidReason, "spec.activeBundle: "+st.Detail
	case len(s.bundles) > 0 && s.active.Spec.KubernetesMinor != s.minor:
		st.State = packagesv1.BundleControllerUpgradeAvailable
		st.Detail = fmt.Sprintf("bundle %s is available for Kubernetes %s (active: %s, for %s)", st.LatestBundle, s.minor, active, s.active.Spec.KubernetesMinor)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, packagesv1.ReadyReason, "using bundle "+active+"; "+st.Detail
	case len(s.bundles) > 0 && s.bundles[len(s.bundles)-1].Spec.Build > s.active.Spec.Build:
		st.State = packagesv1.BundleControllerUpgradeAvailable
		st.Detail = fmt.Sprintf("bundle %s is available (active: %s)", st.LatestBundle, active)
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, packagesv1.ReadyReason, "using bundle "+active+"; "+st.Detail
	default:
		st.Detail = "using bundle " + active
		ready.Status, ready.Reason, ready.Message = metav1.ConditionTrue, packagesv1.ReadyReason, st.Detail
	}
}

func setSourceReachable(pbc *packagesv1.PackageBundleController, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&pbc.Status.Conditions, metav1.Condition{
		Type: packagesv1.SourceReachableCondition, Status: status, Reason: reason, Message: msg, ObservedGeneration: pbc.Generation,
	})
}
