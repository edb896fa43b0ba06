package client

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func TestTheTeardownsEventsAreThoseOfItsClusterItsReleasesAndItsControlPlaneSinceItBegan(t *testing.T) {
	began := time.Date(2026, 11, 28, 9, 48, 42, 900_000_000, time.UTC)
	teardown := &teardownEvents{
		cluster: "flotilla-uid", capiCluster: "capi-uid", since: began,
		controlPlane: clusterv1.ContractVersionedObjectReference{Kind: "LocalControlPlane", Name: "w1", APIGroup: "controlplane.flotilla.dev"},
	}
	at := func(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(began.Add(d)) }
	for _, tc := range []struct {
		name  string
		event eventsv1.Event
		is    bool
	}{
		{name: "the Flotilla Cluster's", is: true,
			event: eventsv1.Event{Regarding: corev1.ObjectReference{Kind: "Cluster", Name: "w1", UID: "flotilla-uid"}, EventTime: at(time.Second)}},
		{name: "a release's, related to the CAPI Cluster", is: true,
			event: eventsv1.Event{Regarding: corev1.ObjectReference{Kind: "HelmReleaseProxy", Name: "a-w1-1", UID: "hrp"}, Related: &corev1.ObjectReference{UID: "capi-uid"}, EventTime: at(time.Second)}},
		{name: "the control plane's", is: true,
			event: eventsv1.Event{Regarding: corev1.ObjectReference{Kind: "LocalControlPlane", Name: "w1"}, EventTime: at(time.Second)}},
		{name: "the control plane's from before the teardown (a restart a moment earlier)",
			event: eventsv1.Event{Regarding: corev1.ObjectReference{Kind: "LocalControlPlane", Name: "w1"}, EventTime: at(-100 * time.Millisecond)}},
		{name: "the control plane's again, in a series that grew since", is: true,
			event: eventsv1.Event{Regarding: corev1.ObjectReference{Kind: "LocalControlPlane", Name: "w1"}, EventTime: at(-time.Hour), Series: &eventsv1.EventSeries{Count: 2, LastObservedTime: at(time.Second)}}},
		{name: "from the core API, within the second the teardown began (whole seconds)", is: true,
			event: eventsv1.Event{Regarding: corev1.ObjectReference{Kind: "LocalControlPlane", Name: "w1"}, DeprecatedLastTimestamp: metav1.NewTime(began.Truncate(time.Second))}},
		{name: "another cluster's release",
			event: eventsv1.Event{Regarding: corev1.ObjectReference{Kind: "HelmReleaseProxy", Name: "a-w2-1", UID: "hrp2"}, Related: &corev1.ObjectReference{UID: "other-capi-uid"}, EventTime: at(time.Second)}},
		{name: "another cluster's control plane",
			event: eventsv1.Event{Regarding: corev1.ObjectReference{Kind: "LocalControlPlane", Name: "w2"}, EventTime: at(time.Second)}},
		{name: "a Machine's of the same name as the control plane",
			event: eventsv1.Event{Regarding: corev1.ObjectReference{Kind: "Machine", Name: "w1"}, EventTime: at(time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(happenedSince(tc.event, teardown.since) && teardown.concerns(&tc.event)).To(Equal(tc.is))
		})
	}
}
