package clusterlifecycle

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

func TestOwnershipOf(t *testing.T) {
	c := &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "w1", UID: "uid-a"}}
	ns := func(l map[string]string) ctrlclient.Object {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-packages-w1", Labels: l}}
	}
	tests := []struct {
		name string
		obj  ctrlclient.Object
		want ownership
	}{
		{name: "a missing object is absent", obj: nil, want: absent},
		{name: "an object with the cluster's namespace, name and UID is owned", want: owned, obj: ns(map[string]string{
			packagesv1.ClusterNamespaceLabel: "team-a", packagesv1.ClusterNameLabel: "w1", packagesv1.ClusterUIDLabel: "uid-a"})},
		{name: "an object of the same namespace and name with another UID is the cluster's from before", want: adoptable, obj: ns(map[string]string{
			packagesv1.ClusterNamespaceLabel: "team-a", packagesv1.ClusterNameLabel: "w1", packagesv1.ClusterUIDLabel: "uid-before-move"})},
		{name: "an object of the same namespace and name without a UID is the cluster's from an older Flotilla", want: adoptable, obj: ns(map[string]string{
			packagesv1.ClusterNamespaceLabel: "team-a", packagesv1.ClusterNameLabel: "w1"})},
		{name: "an object of a same-named cluster in another namespace is foreign, whatever its UID", want: foreign, obj: ns(map[string]string{
			packagesv1.ClusterNamespaceLabel: "default", packagesv1.ClusterNameLabel: "w1", packagesv1.ClusterUIDLabel: "uid-a"})},
		{name: "an object without cluster labels is foreign", want: foreign, obj: ns(nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(ownershipOf(c, tt.obj)).To(Equal(tt.want))
		})
	}
}

func TestPackagesReadyNamesTheOwnerOfAConflict(t *testing.T) {
	g := NewWithT(t)
	c := &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "w1", UID: "uid-a", Generation: 2}}
	cond := packagesReady(c, nil)
	g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond.ObservedGeneration).To(Equal(int64(2)))

	admins := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-packages-w1", Labels: map[string]string{
		packagesv1.ClusterNamespaceLabel: "default", packagesv1.ClusterNameLabel: "w1", packagesv1.ClusterUIDLabel: "uid-admin"}}}
	cond = packagesReady(c, []ctrlclient.Object{admins})
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond.Reason).To(Equal(packagesv1.NameConflictReason))
	g.Expect(cond.Message).To(And(ContainSubstring("namespace flotilla-packages-w1 belongs to Cluster default/w1 (UID uid-admin)"),
		ContainSubstring("rename this Cluster")))

	cond = packagesReady(c, []ctrlclient.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-packages-w1"}}})
	g.Expect(cond.Message).To(ContainSubstring("exists without the labels"))
}
