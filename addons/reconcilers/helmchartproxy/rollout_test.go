package helmchartproxy

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

func TestReleaseState(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	hrp := func(conds ...metav1.Condition) *addonsv1.HelmReleaseProxy {
		h := &addonsv1.HelmReleaseProxy{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		for _, c := range conds {
			if c.ObservedGeneration == 0 {
				c.ObservedGeneration = 2
			}
			h.Status.Conditions = append(h.Status.Conditions, c)
		}
		return h
	}
	healthy := metav1.Condition{Type: addonsv1.HealthyCondition, Status: metav1.ConditionTrue}
	unavailable := metav1.Condition{Type: addonsv1.HealthyCondition, Status: metav1.ConditionFalse, Message: "Deployment a/b (0 of 1 available)"}
	installFailed := metav1.Condition{Type: addonsv1.ReadyCondition, Status: metav1.ConditionFalse, Reason: addonsv1.InstallFailedReason, Message: "boom"}
	tests := []struct {
		name    string
		hrp     *addonsv1.HelmReleaseProxy
		elapsed time.Duration
		want    releaseHealth
	}{
		{"a healthy release for its generation is healthy", hrp(healthy), time.Minute, stateHealthy},
		{"health reported for an older generation does not count", hrp(metav1.Condition{Type: addonsv1.HealthyCondition, Status: metav1.ConditionTrue, ObservedGeneration: 1}), time.Second, stateWaiting},
		{"a Helm failure fails at once", hrp(installFailed), time.Second, stateFailed},
		{"unavailable workloads are waited for", hrp(unavailable), time.Minute, stateWaiting},
		{"unavailable workloads past the health timeout fail", hrp(unavailable), 6 * time.Minute, stateFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, _ := releaseState(tt.hrp, &start, DefaultHealthTimeout, start.Add(tt.elapsed))
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestSameReleaseIgnoresServerDefaults(t *testing.T) {
	g := NewWithT(t)
	want := &addonsv1.HelmReleaseProxy{Spec: addonsv1.HelmReleaseProxySpec{ClusterName: "w1", ReleaseName: "r",
		ReleaseSpec: addonsv1.ReleaseSpec{ChartName: "c", RepoURL: "oci://r", ReconcileStrategy: addonsv1.ReconcileContinuous,
			DriftCorrection: &addonsv1.DriftCorrection{}}}}
	have := want.DeepCopy()
	have.Spec.ReconcileStrategy = ""
	have.Spec.DriftCorrection.Mode = addonsv1.DriftCorrectionDisabled
	g.Expect(sameRelease(have, want)).To(BeTrue())
	have.Spec.Values = "a: 1\n"
	g.Expect(sameRelease(have, want)).To(BeFalse())
}
