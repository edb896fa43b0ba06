package localcontrolplane

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
)

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

func TestRememberPIDsReportsEachProcessOnce(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{pids: map[types.NamespacedName]map[string]int{}}
	key := types.NamespacedName{Namespace: "team-a", Name: "work"}
	first := []controlplane.ProcessStatus{{Name: "etcd", PID: 10, Adopted: true}, {Name: "kube-apiserver", PID: 11, Adopted: true}}

	unseen, previous := r.rememberPIDs(key, first)
	g.Expect(unseen).To(Equal(first), "a restarted manager sees every process once")
	g.Expect(previous).To(BeNil())

	unseen, previous = r.rememberPIDs(key, first)
	g.Expect(unseen).To(BeEmpty(), "and then not again")
	g.Expect(previous).To(Equal(map[string]int{"etcd": 10, "kube-apiserver": 11}))

	restarted := []controlplane.ProcessStatus{{Name: "etcd", PID: 10, Adopted: true}, {Name: "kube-apiserver", PID: 99}}
	unseen, _ = r.rememberPIDs(key, restarted)
	g.Expect(unseen).To(Equal(restarted[1:]), "a new pid is seen")

	r.forgetPIDs(key)
	unseen, previous = r.rememberPIDs(key, restarted)
	g.Expect(unseen).To(HaveLen(2))
	g.Expect(previous).To(BeNil())
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
