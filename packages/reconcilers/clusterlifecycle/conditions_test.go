package clusterlifecycle_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	clusterreconciler "github.com/flotilla-dev/flotilla/cluster/reconcilers/cluster"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/packages/reconcilers/clusterlifecycle"
	"github.com/flotilla-dev/flotilla/pkg/predelete"
)

// The tests run the reconciler's Reconcile against a real kube-apiserver, beside the Cluster
// reconciler of the cluster component: the two write the conditions of the same Flotilla
// Clusters.

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Options{}, func(e *testenv.Environment) { env = e }))
}

// lagging is a client whose reads of one Cluster return the copy it holds, and whose other reads
// and writes go to the API server: a manager's cache that has not seen the latest writes of
// that Cluster yet.
type lagging struct {
	ctrlclient.Client
	cluster *flotillav1.Cluster
}

func (l lagging) Get(ctx context.Context, key ctrlclient.ObjectKey, obj ctrlclient.Object, opts ...ctrlclient.GetOption) error {
	if c, ok := obj.(*flotillav1.Cluster); ok && key == ctrlclient.ObjectKeyFromObject(l.cluster) {
		l.cluster.DeepCopyInto(c)
		return nil
	}
	return l.Client.Get(ctx, key, obj, opts...)
}

// conditionTypes are the types of the conditions of c as the API server holds it.
func conditionTypes(g Gomega, c *flotillav1.Cluster) []string {
	held := &flotillav1.Cluster{}
	g.Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKeyFromObject(c), held)).To(Succeed())
	types := make([]string, 0, len(held.Status.Conditions))
	for _, cond := range held.Status.Conditions {
		types = append(types, cond.Type)
	}
	return types
}

// conditionOwners are the field managers of each condition of c's status, by condition type, as
// c's managedFields record them.
func conditionOwners(g Gomega, c *flotillav1.Cluster) map[string][]string {
	owners := map[string][]string{}
	for _, f := range c.ManagedFields {
		if f.Subresource != "status" || f.FieldsV1 == nil {
			continue
		}
		var fields struct {
			Status struct {
				Conditions map[string]any `json:"f:conditions"`
			} `json:"f:status"`
		}
		g.Expect(json.Unmarshal(f.FieldsV1.GetRawBytes(), &fields)).To(Succeed())
		for k := range fields.Status.Conditions {
			entry, ok := strings.CutPrefix(k, "k:")
			if !ok {
				continue
			}
			var key struct{ Type string }
			g.Expect(json.Unmarshal([]byte(entry), &key)).To(Succeed())
			owners[key.Type] = append(owners[key.Type], f.Manager)
		}
	}
	return owners
}

func TestEachWriterOfAClustersConditionsKeepsTheOthers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	g.Expect(env.Client.Create(ctx, &infrav1.LocalDatacenterConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: ns},
		Spec:       infrav1.LocalDatacenterConfigSpec{Scheduler: ptr.To(false)},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &infrav1.LocalMachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: ns},
		Spec:       infrav1.LocalMachineConfigSpec{Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}},
	})).To(Succeed())
	// The finalizers and the pre-delete hook are there from the start: the writes below are of
	// the status alone.
	c := &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{
			Name: ns, Namespace: ns,
			Finalizers:  []string{flotillav1.ClusterFinalizer, packagesv1.ClusterCleanupFinalizer},
			Annotations: map[string]string{predelete.Annotation(clusterlifecycle.PreDeleteHook): ""},
		},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
			WorkerNodeGroups: []flotillav1.WorkerNodeGroup{{Name: "md-0", Count: 1,
				MachineGroupRef: flotillav1.Ref{Kind: flotillav1.LocalMachineConfigKind, Name: "small"}}},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	asCreated := c.DeepCopy()
	req := ctrl.Request{NamespacedName: ctrlclient.ObjectKeyFromObject(c)}

	packages := func(cached *flotillav1.Cluster) *clusterlifecycle.Reconciler {
		return &clusterlifecycle.Reconciler{
			Client: lagging{Client: env.Client, cluster: cached}, APIReader: env.Client, Recorder: &events.FakeRecorder{}}
	}
	clusters := func(cached *flotillav1.Cluster) *clusterreconciler.Reconciler {
		return &clusterreconciler.Reconciler{
			Client: lagging{Client: env.Client, cluster: cached}, Recorder: &events.FakeRecorder{},
			ResolveVersion: func(string) (string, error) { return "v1.36.3", nil }}
	}
	clusterConditions := []string{flotillav1.ReadyCondition, flotillav1.ControlPlaneReadyCondition,
		flotillav1.WorkersReadyCondition, flotillav1.PausedCondition}

	_, err := clusters(asCreated).Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(conditionTypes(g, c)).To(ConsistOf(clusterConditions))

	t.Run("PackagesReady, written from a copy without the Cluster reconciler's conditions, leaves them be", func(t *testing.T) {
		g := NewWithT(t)
		_, err := packages(asCreated).Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conditionTypes(g, c)).To(ConsistOf(append(clusterConditions, packagesv1.PackagesReadyCondition)))
	})

	t.Run("the Cluster reconciler's conditions, written from a copy without PackagesReady, leave it be", func(t *testing.T) {
		g := NewWithT(t)
		live := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, req.NamespacedName, live)).To(Succeed())
		_, err := packages(live).Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(conditionTypes(g, c)).To(ContainElement(packagesv1.PackagesReadyCondition))

		// The cache has seen the Cluster reconciler's own write and a new spec (a second worker),
		// not PackagesReady.
		cached := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, req.NamespacedName, cached)).To(Succeed())
		cached.Spec.WorkerNodeGroups[0].Count = 2
		g.Expect(env.Client.Update(ctx, cached)).To(Succeed())
		meta.RemoveStatusCondition(&cached.Status.Conditions, packagesv1.PackagesReadyCondition)

		_, err = clusters(cached).Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		held := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, req.NamespacedName, held)).To(Succeed())
		g.Expect(held.Status.Workers.Desired).To(BeEquivalentTo(2), "the Cluster reconciler wrote the status of the new spec")
		g.Expect(meta.IsStatusConditionTrue(held.Status.Conditions, packagesv1.PackagesReadyCondition)).To(BeTrue())
		g.Expect(conditionTypes(g, c)).To(ConsistOf(append(clusterConditions, packagesv1.PackagesReadyCondition)))
	})

	t.Run("the Cluster reconciler does not write back an outdated PackagesReady its copy holds", func(t *testing.T) {
		g := NewWithT(t)
		cached := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, req.NamespacedName, cached)).To(Succeed())
		cached.Spec.WorkerNodeGroups[0].Count = 3
		g.Expect(env.Client.Update(ctx, cached)).To(Succeed())
		meta.SetStatusCondition(&cached.Status.Conditions, metav1.Condition{Type: packagesv1.PackagesReadyCondition,
			Status: metav1.ConditionFalse, Reason: packagesv1.NameConflictReason, Message: "as it was once"})

		_, err := clusters(cached).Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		held := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, req.NamespacedName, held)).To(Succeed())
		g.Expect(held.Status.Workers.Desired).To(BeEquivalentTo(3), "the Cluster reconciler wrote the status of the new spec")
		g.Expect(meta.IsStatusConditionTrue(held.Status.Conditions, packagesv1.PackagesReadyCondition)).To(BeTrue())
	})

	t.Run("each condition has one owner", func(t *testing.T) {
		g := NewWithT(t)
		held := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, req.NamespacedName, held)).To(Succeed())
		want := map[string][]string{packagesv1.PackagesReadyCondition: {clusterlifecycle.FieldOwner}}
		for _, conditionType := range clusterConditions {
			want[conditionType] = []string{clusterreconciler.FieldOwner}
		}
		g.Expect(conditionOwners(g, held)).To(Equal(want))
	})
}
