package objectpatch_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/pkg/objectpatch"
)

// The tests write PacketClusters, a CRD with a status subresource and conditions, to a real
// kube-apiserver, and look at what the API server holds and what a watcher sees.

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, func(e *testenv.Environment) { env = e }))
}

const ourFinalizer = "test.flotilla.dev/ours"

func newPacketCluster(t *testing.T, finalizers ...string) *infrav1.PacketCluster {
	t.Helper()
	g := NewWithT(t)
	pc := &infrav1.PacketCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: env.NewNamespace(t), Name: "pc", Finalizers: finalizers},
		Spec:       infrav1.PacketClusterSpec{ProjectID: "project", Metro: "da"},
	}
	g.Expect(env.Client.Create(context.Background(), pc)).To(Succeed())
	return read(t, pc)
}

// read returns the PacketCluster as the API server holds it.
func read(t *testing.T, pc *infrav1.PacketCluster) *infrav1.PacketCluster {
	t.Helper()
	got := &infrav1.PacketCluster{}
	NewWithT(t).Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKeyFromObject(pc), got)).To(Succeed())
	return got
}

func ready(pc *infrav1.PacketCluster) {
	pc.Status.Conditions = []metav1.Condition{{
		Type: infrav1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Provisioned",
		LastTransitionTime: metav1.NewTime(time.Now().Truncate(time.Second)),
	}}
	pc.Status.ElasticIP = &infrav1.PacketElasticIP{ID: "ip-1", Address: "198.51.100.7"}
	pc.Status.Initialization.Provisioned = new(true)
}

func TestWriteSendsMetadataAndSpecThenTheWholeStatusInOneWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pc := newPacketCluster(t)
	w, err := ctrlclient.NewWithWatch(env.Config, ctrlclient.Options{Scheme: env.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	watcher, err := w.Watch(ctx, &infrav1.PacketClusterList{}, ctrlclient.InNamespace(pc.Namespace),
		&ctrlclient.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: pc.ResourceVersion}})
	g.Expect(err).NotTo(HaveOccurred())
	defer watcher.Stop()

	p := objectpatch.New(env.Client, pc)
	pc.Labels = map[string]string{"written": "yes"}
	pc.Spec.Facility = "da11"
	ready(pc)
	g.Expect(p.Write(ctx)).To(Succeed())

	held := read(t, pc)
	g.Expect(held.Labels).To(HaveKeyWithValue("written", "yes"))
	g.Expect(held.Spec.Facility).To(Equal("da11"))
	g.Expect(held.Status.ElasticIP).To(Equal(pc.Status.ElasticIP))
	g.Expect(held.Status.Conditions).To(HaveLen(1))
	g.Expect(pc.ResourceVersion).To(Equal(held.ResourceVersion), "the object in memory carries the version of the last write")
	g.Expect(held.Generation).To(BeEquivalentTo(2))
	g.Expect(pc.Generation).To(Equal(held.Generation), "and the generation of its new spec")

	// A watcher sees the metadata and spec, then the whole status at once: never the Ready
	// condition without the elastic IP it speaks of.
	var seen []*infrav1.PacketCluster
	for len(seen) < 2 {
		select {
		case ev := <-watcher.ResultChan():
			g.Expect(ev.Type).To(Equal(watch.Modified))
			seen = append(seen, ev.Object.(*infrav1.PacketCluster))
		case <-time.After(10 * time.Second):
			t.Fatalf("saw %d writes, want 2", len(seen))
		}
	}
	g.Expect(seen[0].Spec.Facility).To(Equal("da11"))
	g.Expect(seen[0].Status.Conditions).To(BeEmpty())
	g.Expect(seen[0].Status.ElasticIP).To(BeNil())
	g.Expect(seen[1].Status.Conditions).To(HaveLen(1))
	g.Expect(seen[1].Status.ElasticIP).NotTo(BeNil())
	g.Expect(seen[1].ResourceVersion).To(Equal(held.ResourceVersion))

	// Nothing changed since: nothing is sent.
	g.Expect(p.Write(ctx)).To(Succeed())
	select {
	case ev := <-watcher.ResultChan():
		t.Fatalf("a write with nothing changed reached the API server: %s", ev.Type)
	case <-time.After(500 * time.Millisecond):
	}
	g.Expect(read(t, pc).ResourceVersion).To(Equal(held.ResourceVersion))
}

func TestAFinalizerWrittenFromAnOutdatedCopyConflictsInsteadOfDroppingAnother(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pc := newPacketCluster(t)
	p := objectpatch.New(env.Client, pc)

	// Someone else adds a finalizer after the reconcile read the object.
	other := read(t, pc)
	controllerutil.AddFinalizer(other, "someone.else/finalizer")
	g.Expect(env.Client.Update(ctx, other)).To(Succeed())

	added, err := p.EnsureFinalizer(ctx, ourFinalizer)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "got %v", err)
	g.Expect(added).To(BeFalse())
	g.Expect(pc.Finalizers).To(BeEmpty(), "nothing written, nothing changed in memory")
	result, err := objectpatch.RequeueOnConflict(err, objectpatch.ConflictRetry)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.RequeueAfter).To(Equal(objectpatch.ConflictRetry))
	g.Expect(read(t, pc).Finalizers).To(ConsistOf("someone.else/finalizer"))

	// A finalizer changed in memory and sent by Write is locked as well.
	controllerutil.AddFinalizer(pc, ourFinalizer)
	g.Expect(apierrors.IsConflict(p.Write(ctx))).To(BeTrue())
	g.Expect(read(t, pc).Finalizers).To(ConsistOf("someone.else/finalizer"))

	// The next reconcile reads the object again and adds its finalizer beside the other.
	pc = read(t, pc)
	p = objectpatch.New(env.Client, pc)
	added, err = p.EnsureFinalizer(ctx, ourFinalizer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added).To(BeTrue())
	g.Expect(read(t, pc).Finalizers).To(ConsistOf("someone.else/finalizer", ourFinalizer))
	added, err = p.EnsureFinalizer(ctx, ourFinalizer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added).To(BeFalse())
}

func TestEnsureFinalizerWritesTheFinalizerAloneAndWriteTheRest(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pc := newPacketCluster(t)
	p := objectpatch.New(env.Client, pc)

	ready(pc)
	pc.Spec.Facility = "da11"
	added, err := p.EnsureFinalizer(ctx, ourFinalizer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added).To(BeTrue())
	held := read(t, pc)
	g.Expect(held.Finalizers).To(ConsistOf(ourFinalizer))
	g.Expect(held.Spec.Facility).To(BeEmpty(), "the spec changed in memory waits for Write")
	g.Expect(held.Status.Conditions).To(BeEmpty(), "the status changed in memory waits for Write")
	g.Expect(pc.ResourceVersion).To(Equal(held.ResourceVersion))
	g.Expect(pc.Finalizers).To(ConsistOf(ourFinalizer))

	// Write starts from the finalizer's write: with a lock it does not conflict with it.
	g.Expect(p.Write(ctx, objectpatch.WithOptimisticLock())).To(Succeed())
	held = read(t, pc)
	g.Expect(held.Finalizers).To(ConsistOf(ourFinalizer))
	g.Expect(held.Spec.Facility).To(Equal("da11"))
	g.Expect(held.Status.ElasticIP).To(Equal(pc.Status.ElasticIP))
	g.Expect(pc.ResourceVersion).To(Equal(held.ResourceVersion))
}

func TestWithOptimisticLockRefusesAStatusFromAnOutdatedCopy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pc := newPacketCluster(t)
	first, second := pc.DeepCopy(), pc.DeepCopy()
	firstPatch, secondPatch := objectpatch.New(env.Client, first), objectpatch.New(env.Client, second)

	ready(first)
	g.Expect(firstPatch.Write(ctx, objectpatch.WithOptimisticLock())).To(Succeed())

	second.Status.ElasticIP = &infrav1.PacketElasticIP{ID: "ip-2", Address: "198.51.100.8"}
	err := secondPatch.Write(ctx, objectpatch.WithOptimisticLock())
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "got %v", err)
	g.Expect(read(t, pc).Status.ElasticIP.ID).To(Equal("ip-1"))

	// The writer that won goes on from its own write.
	first.Status.ElasticIP.Address = "198.51.100.9"
	g.Expect(firstPatch.Write(ctx, objectpatch.WithOptimisticLock())).To(Succeed())
	g.Expect(read(t, pc).Status.ElasticIP.Address).To(Equal("198.51.100.9"))

	// Without the lock the outdated status wins: the lock is what refused it.
	g.Expect(secondPatch.Write(ctx)).To(Succeed())
	g.Expect(read(t, pc).Status.ElasticIP.ID).To(Equal("ip-2"))

	// An apply of the status is locked too.
	first.Status.ElasticIP.Address = "198.51.100.10"
	err = firstPatch.Write(ctx, objectpatch.WithOptimisticLock(), objectpatch.WithStatusApply("first-writer", owning(true)))
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "got %v", err)
	g.Expect(read(t, pc).Status.ElasticIP.ID).To(Equal("ip-2"))
}

// condition is a condition of a PacketCluster.
func condition(conditionType string, status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: conditionType, Status: status, Reason: "Tested", Message: "set by the test"}
}

// owning returns the part of a PacketCluster's status a writer owns: the conditions of the given
// types, and the elastic IP when withIP.
func owning(withIP bool, types ...string) func(*infrav1.PacketCluster) *infrav1.PacketCluster {
	return func(pc *infrav1.PacketCluster) *infrav1.PacketCluster {
		owned := &infrav1.PacketCluster{}
		for _, cond := range pc.Status.Conditions {
			if slices.Contains(types, cond.Type) {
				owned.Status.Conditions = append(owned.Status.Conditions, cond)
			}
		}
		if withIP {
			owned.Status.ElasticIP = pc.Status.ElasticIP
		}
		return owned
	}
}

// conditionTypes are the types of pc's conditions.
func conditionTypes(pc *infrav1.PacketCluster) []string {
	var types []string
	for _, cond := range pc.Status.Conditions {
		types = append(types, cond.Type)
	}
	return types
}

func TestWithStatusApplyEachWriterKeepsTheOthersConditions(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	pc := newPacketCluster(t)
	// Two writers start from the same copy, and neither reads the other's writes.
	first, second := pc.DeepCopy(), pc.DeepCopy()
	firstPatch, secondPatch := objectpatch.New(env.Client, first), objectpatch.New(env.Client, second)
	asFirst := objectpatch.WithStatusApply("first-writer", owning(true, infrav1.ReadyCondition))
	asSecond := objectpatch.WithStatusApply("second-writer", owning(false, "Checked"))

	meta.SetStatusCondition(&first.Status.Conditions, condition(infrav1.ReadyCondition, metav1.ConditionTrue))
	first.Status.ElasticIP = &infrav1.PacketElasticIP{ID: "ip-1", Address: "198.51.100.7"}
	g.Expect(firstPatch.Write(ctx, asFirst)).To(Succeed())
	g.Expect(first.ResourceVersion).To(Equal(read(t, pc).ResourceVersion), "the object in memory carries the version of the last write")
	meta.SetStatusCondition(&second.Status.Conditions, condition("Checked", metav1.ConditionTrue))
	g.Expect(secondPatch.Write(ctx, asSecond)).To(Succeed())
	held := read(t, pc)
	g.Expect(conditionTypes(held)).To(ConsistOf(infrav1.ReadyCondition, "Checked"))
	g.Expect(held.Status.ElasticIP).To(Equal(first.Status.ElasticIP))

	// The first writer changes its condition, from its copy without the second's.
	meta.SetStatusCondition(&first.Status.Conditions, condition(infrav1.ReadyCondition, metav1.ConditionFalse))
	g.Expect(firstPatch.Write(ctx, asFirst)).To(Succeed())
	held = read(t, pc)
	g.Expect(meta.IsStatusConditionFalse(held.Status.Conditions, infrav1.ReadyCondition)).To(BeTrue())
	g.Expect(meta.IsStatusConditionTrue(held.Status.Conditions, "Checked")).To(BeTrue())

	// What a writer leaves out of its part goes; the other's part stays.
	meta.RemoveStatusCondition(&second.Status.Conditions, "Checked")
	g.Expect(secondPatch.Write(ctx, asSecond)).To(Succeed())
	held = read(t, pc)
	g.Expect(conditionTypes(held)).To(ConsistOf(infrav1.ReadyCondition))
	g.Expect(held.Status.ElasticIP).NotTo(BeNil())

	// A merge patch from a copy without the first writer's condition drops it: the apply is what
	// kept it.
	meta.SetStatusCondition(&second.Status.Conditions, condition("Checked", metav1.ConditionTrue))
	g.Expect(secondPatch.Write(ctx)).To(Succeed())
	g.Expect(conditionTypes(read(t, pc))).To(ConsistOf("Checked"))
}

func TestAnObjectThatLetGoTakesItsStatusWithIt(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	// A reconcile removes its finalizer at once, then writes its status.
	pc := newPacketCluster(t, ourFinalizer)
	g.Expect(env.Client.Delete(ctx, pc)).To(Succeed())
	pc = read(t, pc)
	p := objectpatch.New(env.Client, pc)
	g.Expect(p.RemoveFinalizer(ctx, ourFinalizer)).To(Succeed())
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(pc), &infrav1.PacketCluster{}))).To(BeTrue())
	ready(pc)
	g.Expect(p.Write(ctx)).To(Succeed())
	// A reconcile from a copy read before is not bothered either.
	g.Expect(objectpatch.New(env.Client, pc.DeepCopy()).RemoveFinalizer(ctx, ourFinalizer)).To(Succeed())

	// A reconcile removes its finalizer in memory and writes everything at the end.
	pc = newPacketCluster(t, ourFinalizer)
	g.Expect(env.Client.Delete(ctx, pc)).To(Succeed())
	pc = read(t, pc)
	p = objectpatch.New(env.Client, pc)
	controllerutil.RemoveFinalizer(pc, ourFinalizer)
	ready(pc)
	g.Expect(p.Write(ctx)).To(Succeed())
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(pc), &infrav1.PacketCluster{}))).To(BeTrue())

	// A status applied to an object gone creates nothing.
	pc = newPacketCluster(t, ourFinalizer)
	p = objectpatch.New(env.Client, pc)
	g.Expect(p.RemoveFinalizer(ctx, ourFinalizer)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, pc)).To(Succeed())
	ready(pc)
	g.Expect(p.Write(ctx, objectpatch.WithStatusApply("writer", owning(true, infrav1.ReadyCondition)))).To(Succeed())
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(pc), &infrav1.PacketCluster{}))).To(BeTrue())
}

func TestRequeueOnConflictReturnsOtherErrorsAsTheyAre(t *testing.T) {
	g := NewWithT(t)
	notFound := apierrors.NewNotFound(infrav1.GroupVersion.WithResource("packetclusters").GroupResource(), "pc")
	result, err := objectpatch.RequeueOnConflict(notFound, time.Second)
	g.Expect(err).To(Equal(notFound))
	g.Expect(result.RequeueAfter).To(BeZero())
	result, err = objectpatch.RequeueOnConflict(nil, time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.RequeueAfter).To(BeZero())
}
