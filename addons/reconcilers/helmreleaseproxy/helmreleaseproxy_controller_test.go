package helmreleaseproxy

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

func TestAppliedHashChangesWithWhatAReleaseIsMadeOf(t *testing.T) {
	g := NewWithT(t)
	base := &addonsv1.HelmReleaseProxy{Spec: addonsv1.HelmReleaseProxySpec{ClusterName: "w1", ReleaseName: "r",
		ReleaseSpec: addonsv1.ReleaseSpec{ChartName: "c", RepoURL: "oci://r", Version: "1.0.0"}}}
	h := appliedHash(base, "sha256:v")
	g.Expect(appliedHash(base.DeepCopy(), "sha256:v")).To(Equal(h))
	for name, change := range map[string]func(*addonsv1.HelmReleaseProxy){
		"version":   func(o *addonsv1.HelmReleaseProxy) { o.Spec.Version = "1.0.1" },
		"namespace": func(o *addonsv1.HelmReleaseProxy) { o.Spec.Namespace = "other" },
		"options":   func(o *addonsv1.HelmReleaseProxy) { o.Spec.Options.Wait = true },
		"chart":     func(o *addonsv1.HelmReleaseProxy) { o.Spec.ChartName = "d" },
	} {
		o := base.DeepCopy()
		change(o)
		g.Expect(appliedHash(o, "sha256:v")).NotTo(Equal(h), name)
	}
	g.Expect(appliedHash(base, "sha256:w")).NotTo(Equal(h), "values")
	o := base.DeepCopy()
	o.Spec.DriftCorrection = &addonsv1.DriftCorrection{Mode: addonsv1.DriftCorrectionEnabled}
	g.Expect(appliedHash(o, "sha256:v")).To(Equal(h), "drift correction is not part of the release")
}

func TestRollbackIsRequestedForTheCurrentGenerationOnly(t *testing.T) {
	g := NewWithT(t)
	hrp := &addonsv1.HelmReleaseProxy{ObjectMeta: metav1.ObjectMeta{Generation: 3, Annotations: map[string]string{addonsv1.RollbackAnnotation: "3"}}}
	g.Expect(rollbackRequested(hrp)).To(BeTrue())
	hrp.Generation = 4 // the spec changed since: a new rollout
	g.Expect(rollbackRequested(hrp)).To(BeFalse())
}

func TestSetReady(t *testing.T) {
	installed := &addonsv1.InstalledRelease{ReleaseName: "r", Namespace: "ns", ChartName: "c"}
	tests := []struct {
		name       string
		scope      scope
		installed  *addonsv1.InstalledRelease
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"an installed release with nothing wrong is Ready", scope{}, installed, metav1.ConditionTrue, addonsv1.ReadyReason},
		{"a recorded failure wins", scope{notReady: &notReady{reason: addonsv1.InstallFailedReason, message: "boom"}}, installed, metav1.ConditionFalse, addonsv1.InstallFailedReason},
		{"a release being deleted is not Ready", scope{deleting: true}, installed, metav1.ConditionFalse, addonsv1.DeletingReason},
		{"a release not installed yet is Installing", scope{}, nil, metav1.ConditionFalse, addonsv1.InstallingReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			hrp := &addonsv1.HelmReleaseProxy{ObjectMeta: metav1.ObjectMeta{Generation: 7}}
			hrp.Status.Installed = tt.installed
			s := tt.scope
			s.hrp = hrp
			setReady(hrp, &s)
			c := meta.FindStatusCondition(hrp.Status.Conditions, addonsv1.ReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(tt.wantStatus))
			g.Expect(c.Reason).To(Equal(tt.wantReason))
			g.Expect(c.ObservedGeneration).To(BeEquivalentTo(7))
			g.Expect(c.Message).NotTo(BeEmpty())
		})
	}
}
