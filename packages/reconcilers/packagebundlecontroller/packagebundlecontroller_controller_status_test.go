package packagebundlecontroller

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/reconcilers/packagebundle"
)

// bundleOf is a bundle verified as state by the packagebundle reconciler (an invalid one is not
// signed).
func bundleOf(name string, build int, state packagesv1.PackageBundleState) *packagesv1.PackageBundle {
	b := &packagesv1.PackageBundle{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec:       packagesv1.PackageBundleSpec{KubernetesMinor: "1.36", Build: build},
	}
	var invalid error
	if state == packagesv1.BundleInvalid {
		invalid = errors.New("bundle is not signed")
	}
	packagebundle.SetValidity(b, invalid)
	return b
}

func TestSetStatus(t *testing.T) {
	src := &packagesv1.BundleSource{Registry: "r", Repository: "b"}
	b1, b2 := bundleOf("v1-36-1", 1, packagesv1.BundleValid), bundleOf("v1-36-2", 2, packagesv1.BundleValid)
	invalid := bundleOf("v1-36-3", 3, packagesv1.BundleInvalid)
	edited := bundleOf("v1-36-4", 4, packagesv1.BundleValid)
	edited.Generation = 2 // its spec changed after it was verified
	old := bundleOf("v1-35-4", 4, packagesv1.BundleValid)
	old.Spec.KubernetesMinor = "1.35"
	tests := []struct {
		name       string
		active     string
		s          scope
		wantState  packagesv1.PackageBundleControllerState
		wantReady  metav1.ConditionStatus
		wantReason string
		wantDetail string
	}{
		{name: "a PBC without a cluster is ignored", s: scope{ignored: "no Flotilla Cluster is named x"},
			wantState: packagesv1.BundleControllerIgnored, wantReady: metav1.ConditionFalse, wantReason: packagesv1.ClusterNotFoundReason, wantDetail: "no Flotilla Cluster"},
		{name: "no source is disconnected and says where to set one", s: scope{minor: "1.36"},
			wantState: packagesv1.BundleControllerDisconnected, wantReady: metav1.ConditionFalse, wantReason: packagesv1.NoSourceReason, wantDetail: "package-defaults"},
		{name: "a failed check is disconnected", s: scope{minor: "1.36", source: src, checked: true, checkErr: errors.New("connection refused")},
			wantState: packagesv1.BundleControllerDisconnected, wantReady: metav1.ConditionFalse, wantReason: packagesv1.RegistryUnreachableReason, wantDetail: "connection refused"},
		{name: "no valid bundle says how many were invalid", s: scope{minor: "1.36", source: src, invalid: 2},
			wantState: packagesv1.BundleControllerActive, wantReady: metav1.ConditionFalse, wantReason: packagesv1.NoBundleReason, wantDetail: "(2 invalid)"},
		{name: "the newest bundle active is active", active: "v1-36-2", s: scope{minor: "1.36", source: src, bundles: []*packagesv1.PackageBundle{b1, b2}, active: b2},
			wantState: packagesv1.BundleControllerActive, wantReady: metav1.ConditionTrue, wantReason: packagesv1.ReadyReason, wantDetail: "using bundle v1-36-2"},
		{name: "an older bundle active has an upgrade available", active: "v1-36-1", s: scope{minor: "1.36", source: src, bundles: []*packagesv1.PackageBundle{b1, b2}, active: b1},
			wantState: packagesv1.BundleControllerUpgradeAvailable, wantReady: metav1.ConditionTrue, wantReason: packagesv1.ReadyReason, wantDetail: "v1-36-2 is available"},
		{name: "after a Kubernetes upgrade a bundle of the new minor is an upgrade", active: "v1-35-4", s: scope{minor: "1.36", source: src, bundles: []*packagesv1.PackageBundle{b1}, active: old},
			wantState: packagesv1.BundleControllerUpgradeAvailable, wantReady: metav1.ConditionTrue, wantReason: packagesv1.ReadyReason, wantDetail: "v1-36-1 is available for Kubernetes 1.36"},
		{name: "an invalid active bundle is not Ready and names spec.activeBundle", active: "v1-36-3", s: scope{minor: "1.36", source: src, bundles: []*packagesv1.PackageBundle{b1}, active: invalid},
			wantState: packagesv1.BundleControllerActive, wantReady: metav1.ConditionFalse, wantReason: packagesv1.ActiveBundleInvalidReason, wantDetail: "not signed"},
		{name: "an active bundle whose spec changed since it was verified is not Ready", active: "v1-36-4", s: scope{minor: "1.36", source: src, bundles: []*packagesv1.PackageBundle{b1}, active: edited},
			wantState: packagesv1.BundleControllerActive, wantReady: metav1.ConditionFalse, wantReason: packagesv1.ActiveBundleInvalidReason, wantDetail: "since it was last verified"},
		{name: "a missing active bundle is not Ready", active: "v1-36-9", s: scope{minor: "1.36", source: src, bundles: []*packagesv1.PackageBundle{b1}},
			wantState: packagesv1.BundleControllerActive, wantReady: metav1.ConditionFalse, wantReason: packagesv1.ActiveBundleInvalidReason, wantDetail: "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := tt.s
			s.pbc = &packagesv1.PackageBundleController{Spec: packagesv1.PackageBundleControllerSpec{ActiveBundle: tt.active}}
			s.statusBase = s.pbc.Status.DeepCopy()
			setStatus(&s, time.Now())
			st := s.pbc.Status
			g.Expect(st.State).To(Equal(tt.wantState))
			g.Expect(st.Detail).To(ContainSubstring(tt.wantDetail))
			ready := meta.FindStatusCondition(st.Conditions, packagesv1.ReadyCondition)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(tt.wantReady))
			g.Expect(ready.Reason).To(Equal(tt.wantReason))
			g.Expect(ready.Message).NotTo(BeEmpty())
		})
	}
}

func TestAFailedCheckKeepsTheLastSuccessfulCheckTime(t *testing.T) {
	g := NewWithT(t)
	last := metav1.NewTime(time.Now().Add(-time.Hour))
	s := scope{minor: "1.36", source: &packagesv1.BundleSource{Registry: "r", Repository: "b"}, checked: true, checkErr: errors.New("down")}
	s.pbc = &packagesv1.PackageBundleController{Status: packagesv1.PackageBundleControllerStatus{LastCheckTime: &last}}
	setStatus(&s, time.Now())
	g.Expect(s.pbc.Status.LastCheckTime).To(Equal(&last))
}

func TestCheckDue(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	src := packagesv1.BundleSource{Registry: "r", Repository: "b"}
	checked := func(ago time.Duration) packagesv1.PackageBundleControllerStatus {
		t := metav1.NewTime(now.Add(-ago))
		return packagesv1.PackageBundleControllerStatus{LastCheckTime: &t, Source: src.DeepCopy(), KubernetesMinor: "1.36"}
	}
	tests := []struct {
		name       string
		status     packagesv1.PackageBundleControllerStatus
		annotation string
		source     packagesv1.BundleSource
		wantDue    bool
		wantWait   time.Duration
	}{
		{name: "never checked is due", wantDue: true, source: src},
		{name: "checked recently waits for the rest of the interval", status: checked(time.Hour), source: src, wantWait: 23 * time.Hour},
		{name: "checked an interval ago is due", status: checked(24 * time.Hour), source: src, wantDue: true},
		{name: "a new check-upgrades annotation is due", status: checked(time.Minute), annotation: "now", source: src, wantDue: true},
		{name: "a changed source is due", status: checked(time.Minute), source: packagesv1.BundleSource{Registry: "other", Repository: "b"}, wantDue: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			pbc := &packagesv1.PackageBundleController{Status: tt.status}
			if tt.annotation != "" {
				pbc.Annotations = map[string]string{packagesv1.CheckUpgradesAnnotation: tt.annotation}
			}
			r := &Reconciler{Now: func() time.Time { return now }}
			due, wait := r.checkDue(&scope{pbc: pbc, statusBase: &pbc.Status, source: &tt.source, minor: "1.36"})
			g.Expect(due).To(Equal(tt.wantDue))
			g.Expect(wait).To(Equal(tt.wantWait))
		})
	}
}

func TestRetained(t *testing.T) {
	names := []string{"v1-36-1", "v1-36-2", "v1-36-3", "v1-36-4", "v1-36-5"}
	tests := []struct {
		name, active string
		want         []string
	}{
		{name: "a check records the newest bundles", want: []string{"v1-36-5", "v1-36-4", "v1-36-3"}},
		{name: "and an older active bundle, which is in use", active: "v1-36-1", want: []string{"v1-36-5", "v1-36-4", "v1-36-3", "v1-36-1"}},
		{name: "an active bundle among the newest is not recorded twice", active: "v1-36-4", want: []string{"v1-36-5", "v1-36-4", "v1-36-3"}},
		{name: "an active bundle the registry lacks is not recorded", active: "v1-36-9", want: []string{"v1-36-5", "v1-36-4", "v1-36-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(retained(names, tt.active, 3)).To(Equal(tt.want))
		})
	}
}
