package localcontrolplane

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

func testContext() context.Context {
	return ctrl.LoggerInto(context.Background(), ctrl.Log)
}

func TestHoldsDirectoryBefore(t *testing.T) {
	now := time.Now()
	lcp := func(namespace string, created time.Time) *controlplanev1.LocalControlPlane {
		return &controlplanev1.LocalControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, CreationTimestamp: metav1.NewTime(created)}}
	}
	tests := []struct {
		name string
		a, b *controlplanev1.LocalControlPlane
		want bool
	}{
		{name: "the older control plane holds the directory", a: lcp("z", now.Add(-time.Minute)), b: lcp("a", now), want: true},
		{name: "the younger one does not", a: lcp("a", now), b: lcp("z", now.Add(-time.Minute))},
		{name: "a tie goes to the first namespace", a: lcp("a", now), b: lcp("b", now), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(holdsDirectoryBefore(tt.a, tt.b)).To(Equal(tt.want))
			g.Expect(holdsDirectoryBefore(tt.b, tt.a)).To(Equal(!tt.want))
		})
	}
}

func TestClusterToLocalControlPlane(t *testing.T) {
	tests := []struct {
		name string
		ref  clusterv1.ContractVersionedObjectReference
		want []types.NamespacedName
	}{
		{
			name: "a Cluster maps to its LocalControlPlane",
			ref:  clusterv1.ContractVersionedObjectReference{APIGroup: controlplanev1.GroupVersion.Group, Kind: "LocalControlPlane", Name: "work-cp"},
			want: []types.NamespacedName{{Namespace: "team-a", Name: "work-cp"}},
		},
		{
			name: "a Cluster with another control plane maps to nothing",
			ref:  clusterv1.ContractVersionedObjectReference{APIGroup: "controlplane.cluster.x-k8s.io", Kind: "KubeadmControlPlane", Name: "work-cp"},
		},
		{name: "a Cluster without a control plane maps to nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "work"}}
			cluster.Spec.ControlPlaneRef = tt.ref
			var got []types.NamespacedName
			for _, req := range clusterToLocalControlPlane(context.Background(), cluster) {
				got = append(got, req.NamespacedName)
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestEachProcessIsReportedOnce(t *testing.T) {
	tests := []struct {
		name string
		// before is what the reconciler saw last, nil when it never saw the control plane.
		before []controlplane.ProcessStatus
		now    []controlplane.ProcessStatus
		// initialized says the API server answered before.
		initialized bool
		want        []string
	}{
		{
			name: "a first start is reported as started",
			now:  []controlplane.ProcessStatus{{Name: "etcd", PID: 10}, {Name: "kube-apiserver", PID: 11}},
			want: []string{"Normal Started Started etcd (pid 10), kube-apiserver (pid 11)"},
		},
		{
			name:   "nothing new is not reported again",
			before: []controlplane.ProcessStatus{{Name: "etcd", PID: 10, Adopted: true}},
			now:    []controlplane.ProcessStatus{{Name: "etcd", PID: 10, Adopted: true}},
		},
		{
			name: "a manager start reports what it found running as adopted",
			now: []controlplane.ProcessStatus{
				{Name: "etcd", PID: 10, Adopted: true, Started: time.Now().Add(-time.Hour)},
				{Name: "manager", PID: 12, Adopted: true, Started: time.Now().Add(-time.Hour), History: process.History{Restarts: 1}},
			},
			initialized: true,
			want:        []string{"Normal Adopted Adopted running etcd (pid 10), manager (pid 12)"},
		},
		{
			name: "a manager started again by the supervisor reports its own restart",
			now: []controlplane.ProcessStatus{
				{Name: "etcd", PID: 10, Adopted: true, Started: time.Now().Add(-time.Hour)},
				{Name: "manager", PID: 13, Adopted: true, Started: time.Now(), History: process.History{Restarts: 2, LastExit: "signal: killed"}},
			},
			initialized: true,
			want: []string{
				"Warning ProcessRestarted Restarted manager (pid 13, restart 2 after it exited (signal: killed)): it had stopped, or its configuration changed",
				"Normal Adopted Adopted running etcd (pid 10)",
			},
		},
		{
			name:   "a process the supervisor started again is reported as restarted, not adopted",
			before: []controlplane.ProcessStatus{{Name: "kube-apiserver", PID: 11}},
			now:    []controlplane.ProcessStatus{{Name: "kube-apiserver", PID: 21, Adopted: true, History: process.History{Restarts: 1, LastExit: "exited"}}},
			want:   []string{"Warning ProcessRestarted Restarted kube-apiserver (pid 21, restart 1 after it exited): it had stopped, or its configuration changed"},
		},
		{
			name:   "an exit is reported once while the process waits out its back-off",
			before: []controlplane.ProcessStatus{{Name: "kube-apiserver", PID: 11}},
			now: []controlplane.ProcessStatus{{Name: "kube-apiserver", Log: "/home/logs/kube-apiserver.log", History: process.History{
				Failures: 3, LastExit: "exit status 1", ExitedAt: time.Unix(100, 0), NextStart: time.Now().Add(4 * time.Second),
			}}},
			want: []string{"Warning ProcessExited kube-apiserver exited (exit status 1), 3 time(s) in a row within 30s of its start; starting it again in 4s (see /home/logs/kube-apiserver.log)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			recorder := events.NewFakeRecorder(10)
			r := &Reconciler{recorder: recorder, seen: map[types.NamespacedName]map[string]seenProcess{}, started: time.Now()}
			lcp := &controlplanev1.LocalControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "work"}}
			lcp.Status.Initialization.ControlPlaneInitialized = ptr.To(tt.initialized)
			if tt.before != nil {
				r.remember(ctrlclient.ObjectKeyFromObject(lcp), tt.before)
			}
			s := &scope{lcp: lcp, processes: &controlplane.Status{Processes: tt.now}}
			r.recordProcessEvents(testContext(), s)
			var got []string
			for len(recorder.Events) > 0 {
				got = append(got, <-recorder.Events)
			}
			g.Expect(got).To(Equal(tt.want))

			// Looking again at the same processes reports nothing.
			r.recordProcessEvents(testContext(), s)
			g.Expect(recorder.Events).To(BeEmpty())
		})
	}
}

func TestServerURL(t *testing.T) {
	g := NewWithT(t)
	g.Expect(serverURL(controlplanev1.APIEndpoint{Host: "127.0.0.1", Port: 6443})).To(Equal("https://127.0.0.1:6443"))
}

func TestOwningCluster(t *testing.T) {
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(clusterv1.AddToScheme(scheme)).To(Succeed())
	cluster := func(name, controlPlane string) *clusterv1.Cluster {
		return &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)},
			Spec: clusterv1.ClusterSpec{ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: controlplanev1.GroupVersion.Group, Kind: "LocalControlPlane", Name: controlPlane,
			}},
		}
	}
	lcp := func(label string, owner *clusterv1.Cluster) *controlplanev1.LocalControlPlane {
		l := &controlplanev1.LocalControlPlane{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w1"}}
		if label != "" {
			l.Labels = map[string]string{clusterv1.ClusterNameLabel: label}
		}
		if owner != nil {
			l.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: owner.Name, UID: owner.UID}}
		}
		return l
	}
	tests := []struct {
		name     string
		clusters []*clusterv1.Cluster
		lcp      *controlplanev1.LocalControlPlane
		want     string
	}{
		{name: "the owner Cluster", clusters: []*clusterv1.Cluster{cluster("w1", "w1")}, lcp: lcp("", cluster("w1", "w1")), want: "w1"},
		{name: "before the owner reference, the labelled Cluster that references it", clusters: []*clusterv1.Cluster{cluster("w1", "w1")}, lcp: lcp("w1", nil), want: "w1"},
		{name: "not a labelled Cluster that references another control plane", clusters: []*clusterv1.Cluster{cluster("w1", "other")}, lcp: lcp("w1", nil)},
		{name: "not while the labelled Cluster does not exist", lcp: lcp("w1", nil)},
		{name: "none without owner or label", clusters: []*clusterv1.Cluster{cluster("w1", "w1")}, lcp: lcp("", nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := fake.NewClientBuilder().WithScheme(scheme)
			for _, c := range tt.clusters {
				b = b.WithObjects(c)
			}
			r := &Reconciler{Client: b.Build()}
			got, err := r.owningCluster(context.Background(), tt.lcp)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == "" {
				g.Expect(got).To(BeNil())
				return
			}
			g.Expect(got).NotTo(BeNil())
			g.Expect(got.Name).To(Equal(tt.want))
		})
	}
}
