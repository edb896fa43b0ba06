package predelete_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/predelete"
)

func TestDecide(t *testing.T) {
	began := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	const timeout = 5 * time.Minute
	failed := errors.New("connection refused")
	type (
		u = predelete.Uninstall
		d = predelete.Decision
	)
	cases := []struct {
		name string
		in   predelete.Uninstall
		now  time.Time
		want predelete.Decision
	}{
		{
			name: "a release deleted alone is uninstalled, whatever the policy",
			in:   u{Policy: flotillav1.UninstallSkip},
			want: d{Action: predelete.UninstallNow},
		},
		{
			name: "a release deleted alone whose uninstall fails is tried again without end when nothing bounds it",
			in:   u{Policy: flotillav1.UninstallBestEffort, Tried: true, Err: failed},
			now:  began.Add(time.Hour),
			want: d{Action: predelete.Retry},
		},
		{
			name: "a release deleted alone whose uninstall fails is tried again until the timeout after its deletion",
			in:   u{AloneSince: began, Timeout: timeout, Tried: true, Err: failed},
			now:  began.Add(time.Minute),
			want: d{Action: predelete.Retry, Remaining: 4 * time.Minute},
		},
		{
			name: "a release deleted alone is given up once the timeout after its deletion has passed",
			in:   u{AloneSince: began, Timeout: timeout, Tried: true, Err: failed},
			now:  began.Add(timeout),
			want: d{Action: predelete.GiveUp, Why: "no uninstall succeeded within 5m0s of the deletion"},
		},
		{
			name: "Skip leaves the release to go with its cluster in a teardown, untried",
			in:   u{Policy: flotillav1.UninstallSkip, TeardownBegan: began},
			want: d{Action: predelete.LeaveWithCluster, Why: "the cluster is deleted and uninstallOnClusterDelete is Skip"},
		},
		{
			name: "BestEffort uninstalls in a teardown",
			in:   u{Policy: flotillav1.UninstallBestEffort, TeardownBegan: began},
			want: d{Action: predelete.UninstallNow},
		},
		{
			name: "BestEffort gives the release up after one failed try in a teardown",
			in:   u{Policy: flotillav1.UninstallBestEffort, TeardownBegan: began, Tried: true, Err: failed},
			now:  began,
			want: d{Action: predelete.GiveUp, Why: "the uninstall failed at the cluster's deletion (uninstallOnClusterDelete BestEffort tries once)"},
		},
		{
			name: "no policy is BestEffort",
			in:   u{TeardownBegan: began, Tried: true, Err: failed},
			now:  began,
			want: d{Action: predelete.GiveUp, Why: "the uninstall failed at the cluster's deletion (uninstallOnClusterDelete BestEffort tries once)"},
		},
		{
			name: "Ensure uninstalls in a teardown",
			in:   u{Policy: flotillav1.UninstallEnsure, TeardownBegan: began},
			want: d{Action: predelete.UninstallNow},
		},
		{
			name: "Ensure tries again until the timeout counted from the teardown's beginning",
			in:   u{Policy: flotillav1.UninstallEnsure, TeardownBegan: began, AloneSince: began.Add(4 * time.Minute), Timeout: timeout, Tried: true, Err: failed},
			now:  began.Add(4*time.Minute + 30*time.Second),
			want: d{Action: predelete.Retry, Remaining: 30 * time.Second},
		},
		{
			name: "Ensure gives the release up once the timeout after the teardown's beginning has passed",
			in:   u{Policy: flotillav1.UninstallEnsure, TeardownBegan: began, Timeout: timeout, Tried: true, Err: failed},
			now:  began.Add(timeout + time.Second),
			want: d{Action: predelete.GiveUp, Why: "no uninstall succeeded within 5m0s of the cluster's deletion (uninstallOnClusterDelete Ensure)"},
		},
		{
			name: "Ensure's timeout is 5 minutes when not set",
			in:   u{Policy: flotillav1.UninstallEnsure, TeardownBegan: began, Tried: true, Err: failed},
			now:  began.Add(predelete.DefaultUninstallTimeout - time.Second),
			want: d{Action: predelete.Retry, Remaining: time.Second},
		},
		{
			name: "an uninstall that succeeded lets the object go, whatever the policy and the time",
			in:   u{Policy: flotillav1.UninstallEnsure, TeardownBegan: began, Timeout: timeout, Tried: true},
			now:  began.Add(time.Hour),
			want: d{Action: predelete.Uninstalled},
		},
		{
			name: "a release whose cluster is gone goes with it untried, even with Ensure",
			in:   u{Policy: flotillav1.UninstallEnsure, ClusterGone: true, TeardownBegan: began},
			want: d{Action: predelete.LeaveWithCluster, Why: "the cluster is gone"},
		},
		{
			name: "a release whose cluster is gone goes with it untried when deleted alone",
			in:   u{ClusterGone: true},
			want: d{Action: predelete.LeaveWithCluster, Why: "the cluster is gone"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(predelete.Decide(tc.in, tc.now)).To(Equal(tc.want))
		})
	}
}

func TestTeardownBegan(t *testing.T) {
	deleted := metav1.NewTime(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	cases := []struct {
		name string
		c    *flotillav1.Cluster
		want time.Time
	}{
		{name: "a Cluster that is gone is in no teardown"},
		{name: "a Cluster not being deleted is in no teardown", c: &flotillav1.Cluster{}},
		{
			name: "a deleted Cluster's teardown began at its deletion",
			c:    &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleted}},
			want: deleted.Time,
		},
		{
			name: "a Cluster deleted by clusterctl move is in no teardown",
			c: &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{
				DeletionTimestamp: &deleted,
				Annotations:       map[string]string{clusterctlv1.DeleteForMoveAnnotation: ""},
			}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(predelete.TeardownBegan(tc.c)).To(Equal(tc.want))
		})
	}
}
