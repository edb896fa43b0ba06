package packagereconciler

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/catalog"
)

// setStatus writes the Package's status from what the reconcile found. It is pure and runs
// on every path.
func setStatus(s *scope) {
	p := s.pkg
	st := &p.Status
	st.ObservedGeneration = p.Generation
	if s.resolved != nil {
		st.TargetVersion = s.resolved.Version.Version
		st.Bundle = s.bundle.Name
	}
	if s.result != nil {
		st.CurrentVersion = s.result.ChartVersion
		if st.CurrentVersion == "" {
			st.CurrentVersion = st.TargetVersion
		}
		st.Revision = s.result.Revision
		st.ChartDigest, st.ValuesHash = s.result.ChartDigest, s.result.ValuesHash
	}
	st.UpgradesAvailable = nil
	if s.bundle != nil {
		if bp := s.bundle.Package(p.Spec.PackageName); bp != nil {
			st.UpgradesAvailable = catalog.Newer(bp, st.CurrentVersion)
		}
	}

	ready := metav1.Condition{Type: packagesv1.ReadyCondition, Status: metav1.ConditionFalse, ObservedGeneration: p.Generation}
	switch {
	case s.deleting && s.unreachable != nil:
		st.State = packagesv1.PackageUninstalling
		ready.Reason, ready.Message = packagesv1.ClusterUnreachableReason, s.unreachable.Error()
	case s.deleting:
		st.State = packagesv1.PackageUninstalling
		ready.Reason, ready.Message = packagesv1.DeletingReason, "uninstalling"
		if s.installErr != nil {
			ready.Message = "uninstall failed: " + s.installErr.Error()
		}
	case len(s.invalid) > 0:
		st.State = packagesv1.PackageFailed
		ready.Reason, ready.Message = packagesv1.InvalidSpecReason, s.invalid.ToAggregate().Error()
	case s.waiting != "":
		st.State = packagesv1.PackagePending
		ready.Reason, ready.Message = s.waitingReason, s.waiting
	case s.unreachable != nil:
		st.State = packagesv1.PackagePending
		ready.Reason, ready.Message = packagesv1.ClusterUnreachableReason, s.unreachable.Error()
	case s.installErr != nil:
		st.State = packagesv1.PackageFailed
		ready.Reason, ready.Message = packagesv1.InstallFailedReason, s.installErr.Error()
	case s.result != nil:
		st.State = packagesv1.PackageInstalled
		ready.Status, ready.Reason = metav1.ConditionTrue, packagesv1.ReadyReason
		ready.Message = fmt.Sprintf("%s %s installed in namespace %s (revision %d)", p.Spec.PackageName, st.CurrentVersion, targetNamespace(p), st.Revision)
	case s.progress == packagesv1.PackageInstalling:
		st.State = s.progress
		ready.Reason = packagesv1.InstallingReason
		ready.Message = fmt.Sprintf("installing %s %s into namespace %s", p.Spec.PackageName, st.TargetVersion, targetNamespace(p))
	case s.progress == packagesv1.PackageUpgrading:
		st.State = s.progress
		ready.Reason = packagesv1.UpgradingReason
		ready.Message = fmt.Sprintf("upgrading %s from %s to %s", p.Spec.PackageName, st.CurrentVersion, st.TargetVersion)
		if st.CurrentVersion == st.TargetVersion {
			ready.Message = fmt.Sprintf("upgrading %s %s to a new chart or config", p.Spec.PackageName, st.CurrentVersion)
		}
	default:
		return // nothing happened this time (a failed read): keep what was there
	}
	st.Detail = ready.Message
	meta.SetStatusCondition(&st.Conditions, ready)
}
