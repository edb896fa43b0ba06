package objectpatch_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

func TestBeginAddsTheFinalizerThenStopsWhileTheClusterIsPaused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pc := newPacketCluster(t)
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: pc.Namespace, Name: "c"}}

	stop, _, err := objectpatch.Begin(ctx, objectpatch.New(env.Client, pc), pc, ourFinalizer, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stop).To(BeTrue(), "the finalizer was written: the reconcile starts again from it")
	g.Expect(read(t, pc).Finalizers).To(ConsistOf(ourFinalizer))

	pc = read(t, pc)
	stop, _, err = objectpatch.Begin(ctx, objectpatch.New(env.Client, pc), pc, ourFinalizer, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stop).To(BeTrue(), "the Paused condition was written for the first time")
	g.Expect(conditions.IsFalse(read(t, pc), clusterv1.PausedCondition)).To(BeTrue())

	pc = read(t, pc)
	stop, _, err = objectpatch.Begin(ctx, objectpatch.New(env.Client, pc), pc, ourFinalizer, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stop).To(BeFalse(), "neither paused nor anything to write: the reconcile goes on")

	cluster.Spec.Paused = new(true)
	pc = read(t, pc)
	stop, _, err = objectpatch.Begin(ctx, objectpatch.New(env.Client, pc), pc, ourFinalizer, cluster)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stop).To(BeTrue(), "the cluster is paused")
	g.Expect(conditions.IsTrue(read(t, pc), clusterv1.PausedCondition)).To(BeTrue())

	pc = read(t, pc)
	stop, _, err = objectpatch.Begin(ctx, objectpatch.New(env.Client, pc), pc, ourFinalizer, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stop).To(BeFalse(), "no cluster known: only the finalizer counts")
}
