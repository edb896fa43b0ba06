package cluster_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	clusterreconciler "github.com/flotilla-dev/flotilla/cluster/reconcilers/cluster"
)

// An apply that would change nothing is not sent: the API server would run the object's
// admission webhooks and field management for nothing, at every reconcile. One is sent again
// when the desired object changes, and when someone else changed a field Flotilla applied (its
// managed fields moved): that field is put back.
func TestAnApplyThatWouldChangeNothingIsNotSent(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	applies := 0
	c, err := ctrlclient.NewWithWatch(env.Config, ctrlclient.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	r := &clusterreconciler.Reconciler{
		Client: interceptor.NewClient(c, interceptor.Funcs{
			Apply: func(ctx context.Context, c ctrlclient.WithWatch, obj runtime.ApplyConfiguration, opts ...ctrlclient.ApplyOption) error {
				applies++
				return c.Apply(ctx, obj, opts...)
			},
		}),
		Recorder: events.NewFakeRecorder(10),
	}
	owner := &flotillav1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns}}
	desired := func(tier string) *clusterv1.Cluster {
		return &clusterv1.Cluster{
			TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: clusterv1.ClusterKind},
			ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: ns, Labels: map[string]string{"example.com/tier": tier}},
			Spec:       clusterv1.ClusterSpec{ClusterNetwork: clusterv1.ClusterNetwork{ServiceDomain: "cluster.local"}},
		}
	}

	first := desired("web")
	g.Expect(r.ApplyForTest(ctx, owner, first)).To(Succeed())
	g.Expect(applies).To(Equal(1))
	g.Expect(first.UID).NotTo(BeEmpty(), "the object as the API server returned it")

	again := desired("web")
	g.Expect(r.ApplyForTest(ctx, owner, again)).To(Succeed())
	g.Expect(applies).To(Equal(1), "nothing would change: not sent")
	g.Expect(again.UID).To(Equal(first.UID), "the object as the API server has it")
	g.Expect(again.ResourceVersion).To(Equal(first.ResourceVersion))
	g.Expect(again.GroupVersionKind()).To(Equal(clusterv1.GroupVersion.WithKind(clusterv1.ClusterKind)))

	// Someone else changes a label Flotilla applied: the next apply is sent and puts it back.
	live := &clusterv1.Cluster{}
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(first), live)).To(Succeed())
	live.Labels["example.com/tier"] = "db"
	g.Expect(env.Client.Update(ctx, live)).To(Succeed())
	restored := desired("web")
	g.Expect(r.ApplyForTest(ctx, owner, restored)).To(Succeed())
	g.Expect(applies).To(Equal(2))
	g.Expect(restored.Labels).To(HaveKeyWithValue("example.com/tier", "web"))

	// A change of the desired object is sent.
	changed := desired("batch")
	g.Expect(r.ApplyForTest(ctx, owner, changed)).To(Succeed())
	g.Expect(applies).To(Equal(3))
	g.Expect(changed.Labels).To(HaveKeyWithValue("example.com/tier", "batch"))

	// A recreated object is applied again.
	g.Expect(env.Client.Delete(ctx, changed)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(changed), &clusterv1.Cluster{})
	}).Should(MatchError(ContainSubstring("not found")))
	recreated := desired("batch")
	g.Expect(r.ApplyForTest(ctx, owner, recreated)).To(Succeed())
	g.Expect(applies).To(Equal(4))
	g.Expect(recreated.UID).NotTo(Equal(changed.UID))
}
