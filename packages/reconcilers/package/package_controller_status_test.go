package packagereconciler

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/catalog"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

func TestSetStatus(t *testing.T) {
	bundle := &packagesv1.PackageBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "v1-36-2"},
		Spec: packagesv1.PackageBundleSpec{Packages: []packagesv1.BundlePackage{{
			Name: "hello", Versions: []packagesv1.PackageVersion{{Version: "0.3.0"}, {Version: "0.2.0"}},
		}}},
	}
	resolved := &catalog.Resolved{Package: &bundle.Spec.Packages[0], Version: &bundle.Spec.Packages[0].Versions[0]}
	tests := []struct {
		name        string
		s           scope
		current     string
		wantState   packagesv1.PackageState
		wantReady   metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantCurrent string
		wantUpgrade []string
	}{
		{name: "installed is Ready at the target version", s: scope{bundle: bundle, resolved: resolved, result: &helm.Result{Action: helm.ActionInstalled, Revision: 1, ChartVersion: "0.3.0"}},
			wantState: packagesv1.PackageInstalled, wantReady: metav1.ConditionTrue, wantReason: packagesv1.ReadyReason, wantMessage: "0.3.0 installed", wantCurrent: "0.3.0"},
		{name: "an older current version lists the upgrades", current: "0.2.0", s: scope{bundle: bundle, waiting: "waiting for dependencies", waitingReason: packagesv1.WaitingForDependenciesReason},
			wantState: packagesv1.PackagePending, wantReady: metav1.ConditionFalse, wantReason: packagesv1.WaitingForDependenciesReason, wantMessage: "dependencies", wantCurrent: "0.2.0", wantUpgrade: []string{"0.3.0"}},
		{name: "invalid input fails naming the field", s: scope{invalid: field.ErrorList{field.NotFound(field.NewPath("spec", "packageName"), "nope")}},
			wantState: packagesv1.PackageFailed, wantReady: metav1.ConditionFalse, wantReason: packagesv1.InvalidSpecReason, wantMessage: "spec.packageName"},
		{name: "an unreachable cluster is pending and says so", s: scope{bundle: bundle, resolved: resolved, unreachable: errors.New("cluster ns/w1 cannot be reached")},
			wantState: packagesv1.PackagePending, wantReady: metav1.ConditionFalse, wantReason: packagesv1.ClusterUnreachableReason, wantMessage: "cannot be reached"},
		{name: "a Helm failure is failed with Helm's message", s: scope{bundle: bundle, resolved: resolved, installErr: errors.New("chart requires kubeVersion")},
			wantState: packagesv1.PackageFailed, wantReady: metav1.ConditionFalse, wantReason: packagesv1.InstallFailedReason, wantMessage: "kubeVersion"},
		{name: "a first install in progress is installing, not Ready", s: scope{bundle: bundle, resolved: resolved, progress: packagesv1.PackageInstalling},
			wantState: packagesv1.PackageInstalling, wantReady: metav1.ConditionFalse, wantReason: packagesv1.InstallingReason, wantMessage: "installing hello 0.3.0"},
		{name: "an upgrade in progress is upgrading from the current version", current: "0.2.0", s: scope{bundle: bundle, resolved: resolved, progress: packagesv1.PackageUpgrading},
			wantState: packagesv1.PackageUpgrading, wantReady: metav1.ConditionFalse, wantReason: packagesv1.UpgradingReason, wantMessage: "from 0.2.0 to 0.3.0", wantCurrent: "0.2.0", wantUpgrade: []string{"0.3.0"}},
		{name: "the outcome of the action replaces the progress", current: "0.2.0", s: scope{bundle: bundle, resolved: resolved, progress: packagesv1.PackageUpgrading, result: &helm.Result{Action: helm.ActionUpgraded, Revision: 2, ChartVersion: "0.3.0"}},
			wantState: packagesv1.PackageInstalled, wantReady: metav1.ConditionTrue, wantReason: packagesv1.ReadyReason, wantMessage: "revision 2", wantCurrent: "0.3.0"},
		{name: "a failed action replaces the progress", current: "0.2.0", s: scope{bundle: bundle, resolved: resolved, progress: packagesv1.PackageUpgrading, installErr: errors.New("timed out")},
			wantState: packagesv1.PackageFailed, wantReady: metav1.ConditionFalse, wantReason: packagesv1.InstallFailedReason, wantMessage: "timed out", wantCurrent: "0.2.0", wantUpgrade: []string{"0.3.0"}},
		{name: "deleting is uninstalling", s: scope{deleting: true},
			wantState: packagesv1.PackageUninstalling, wantReady: metav1.ConditionFalse, wantReason: packagesv1.DeletingReason, wantMessage: "uninstalling"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := tt.s
			s.pkg = &packagesv1.Package{
				Spec:   packagesv1.PackageSpec{PackageName: "hello"},
				Status: packagesv1.PackageStatus{CurrentVersion: tt.current},
			}
			setStatus(&s)
			st := s.pkg.Status
			g.Expect(st.State).To(Equal(tt.wantState))
			g.Expect(st.CurrentVersion).To(Equal(tt.wantCurrent))
			g.Expect(st.UpgradesAvailable).To(Equal(tt.wantUpgrade))
			ready := meta.FindStatusCondition(st.Conditions, packagesv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(tt.wantReady))
			g.Expect(ready.Reason).To(Equal(tt.wantReason))
			g.Expect(ready.Message).To(ContainSubstring(tt.wantMessage))
		})
	}
}

func TestProgress(t *testing.T) {
	values := map[string]any{"greeting": "hi"}
	hash, err := helm.ValuesHash(values)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	rel := helm.Release{Name: "hello", Chart: helm.ChartRef{Version: "0.3.0", Digest: digest}, Values: values}
	installed := packagesv1.PackageStatus{
		State: packagesv1.PackageInstalled, CurrentVersion: "0.3.0", ChartDigest: digest, ValuesHash: hash,
		Conditions: []metav1.Condition{{Type: packagesv1.ReadyCondition, Status: metav1.ConditionTrue, Reason: packagesv1.ReadyReason}},
	}
	tests := []struct {
		name   string
		status func(*packagesv1.PackageStatus)
		want   packagesv1.PackageState
	}{
		{name: "a release with the desired chart and values is left alone (a resync)", status: func(*packagesv1.PackageStatus) {}, want: ""},
		{name: "a Package never installed is installing", status: func(st *packagesv1.PackageStatus) { *st = packagesv1.PackageStatus{} }, want: packagesv1.PackageInstalling},
		{name: "a first install that failed is installing again", status: func(st *packagesv1.PackageStatus) {
			*st = packagesv1.PackageStatus{State: packagesv1.PackageFailed}
		}, want: packagesv1.PackageInstalling},
		{name: "new values are an upgrade", status: func(st *packagesv1.PackageStatus) { st.ValuesHash = "sha256:other" }, want: packagesv1.PackageUpgrading},
		{name: "a new chart digest is an upgrade", status: func(st *packagesv1.PackageStatus) { st.ChartDigest = "sha256:other" }, want: packagesv1.PackageUpgrading},
		{name: "a release installed before the status recorded its digest is upgraded once", status: func(st *packagesv1.PackageStatus) { st.ChartDigest, st.ValuesHash = "", "" }, want: packagesv1.PackageUpgrading},
		{name: "a failed upgrade is tried again", status: func(st *packagesv1.PackageStatus) {
			st.State = packagesv1.PackageFailed
			st.Conditions[0].Status, st.Conditions[0].Reason = metav1.ConditionFalse, packagesv1.InstallFailedReason
		}, want: packagesv1.PackageUpgrading},
		{name: "a Package that was waiting for its cluster, with the release as desired, is left alone", status: func(st *packagesv1.PackageStatus) {
			st.State = packagesv1.PackagePending
			st.Conditions[0].Status, st.Conditions[0].Reason = metav1.ConditionFalse, packagesv1.ClusterUnreachableReason
		}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &packagesv1.Package{Status: *installed.DeepCopy()}
			tt.status(&p.Status)
			NewWithT(t).Expect(progress(p, rel)).To(Equal(tt.want))
		})
	}
}
