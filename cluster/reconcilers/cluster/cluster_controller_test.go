package cluster_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/pkg/predelete"
)

// The tests run the cluster component (reconciler and webhooks, as cluster.Setup wires them) in
// a real manager against a real kube-apiserver. CAPI's controllers and the local provider do not
// run: the tests play their part by writing the status those would write.

var env *testenv.Environment

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	e, err := testenv.Start(testenv.Options{Webhooks: true})
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		return 1
	}
	env = e
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		}
	}()

	_, stop, err := e.StartManager(cluster.Setup)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		return 1
	}
	defer func() {
		if err := stop(); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	return m.Run()
}

// fixture creates the provider configs and a Flotilla Cluster with the given worker groups in a
// new namespace, named after the namespace: cluster names are unique across the namespaces of
// an API server.
func fixture(t *testing.T, g Gomega, groups ...flotillav1.WorkerNodeGroup) *flotillav1.Cluster {
	t.Helper()
	ctx := context.Background()
	ns := env.NewNamespace(t)
	g.Expect(env.Client.Create(ctx, &infrav1.LocalDatacenterConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: ns},
		Spec:       infrav1.LocalDatacenterConfigSpec{Scheduler: ptr.To(false)},
	})).To(Succeed())
	g.Expect(env.Client.Create(ctx, &infrav1.LocalMachineConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: ns},
		Spec: infrav1.LocalMachineConfigSpec{Capacity: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("2")}},
	})).To(Succeed())
	c := newCluster(ns, groups...)
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	return c
}

func newCluster(ns string, groups ...flotillav1.WorkerNodeGroup) *flotillav1.Cluster {
	return &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: ns, Namespace: ns},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"},
			WorkerNodeGroups:  groups,
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
}

func group(name string, count int32, machineConfig string) flotillav1.WorkerNodeGroup {
	return flotillav1.WorkerNodeGroup{
		Name: name, Count: count,
		MachineGroupRef: flotillav1.Ref{Kind: flotillav1.LocalMachineConfigKind, Name: machineConfig},
	}
}

func key(c *flotillav1.Cluster, name string) ctrlclient.ObjectKey {
	return ctrlclient.ObjectKey{Namespace: c.Namespace, Name: name}
}

// conditionOf returns the condition of the Cluster as the API server has it.
func conditionOf(g Gomega, c *flotillav1.Cluster, conditionType string) metav1.Condition {
	current := &flotillav1.Cluster{}
	g.Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
	cond := meta.FindStatusCondition(current.Status.Conditions, conditionType)
	g.Expect(cond).NotTo(BeNil(), "condition %s", conditionType)
	return *cond
}

func TestClusterBecomesCAPIObjects(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fixture(t, g, group("md-0", 2, "small"))

	capi := &clusterv1.Cluster{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	current := &flotillav1.Cluster{}
	g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())

	t.Run("the CAPI Cluster points at the local provider's objects and is owned by the Flotilla Cluster", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(capi.Spec.InfrastructureRef).To(Equal(clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "LocalCluster", Name: c.Name}))
		g.Expect(capi.Spec.ControlPlaneRef).To(Equal(clusterv1.ContractVersionedObjectReference{
			APIGroup: controlplanev1.GroupVersion.Group, Kind: "LocalControlPlane", Name: c.Name}))
		g.Expect(capi.Labels).To(HaveKeyWithValue(flotillav1.ClusterNameLabel, c.Name))
		g.Expect(capi.Labels).NotTo(HaveKey(flotillav1.ManagementLabel))
		g.Expect(metav1.GetControllerOf(capi)).To(HaveField("UID", current.UID))
		g.Expect(capi.Spec.ClusterNetwork.Services.CIDRBlocks).To(Equal([]string{flotillav1.DefaultServiceCIDR}), "defaulted by the webhook")
	})

	t.Run("the control plane and the infrastructure cluster exist", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			lcp := &controlplanev1.LocalControlPlane{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name), lcp)).To(Succeed())
			g.Expect(lcp.Spec.Version).To(Equal("v1.36.3"))
			g.Expect(lcp.Spec.Scheduler).To(Equal(ptr.To(false)))
			g.Expect(lcp.Spec.ServiceClusterIPRange).To(Equal(flotillav1.DefaultServiceCIDR))
			g.Expect(env.Client.Get(ctx, key(c, c.Name), &infrav1.LocalCluster{})).To(Succeed())
		}, timeout, interval).Should(Succeed())
	})

	t.Run("the worker group becomes a template and a MachineDeployment using the bootstrap secret", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			lmt := &infrav1.LocalMachineTemplate{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), lmt)).To(Succeed())
			cpu := lmt.Spec.Template.Spec.Capacity[corev1.ResourceCPU]
			g.Expect(cpu.String()).To(Equal("2"))
			md := &clusterv1.MachineDeployment{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), md)).To(Succeed())
			g.Expect(md.Spec.Replicas).To(Equal(ptr.To[int32](2)))
			g.Expect(md.Spec.Template.Spec.Version).To(Equal("v1.36.3"))
			g.Expect(md.Spec.Template.Spec.InfrastructureRef.Name).To(Equal(c.Name + "-md-0"))
			g.Expect(md.Spec.Template.Spec.Bootstrap.DataSecretName).To(Equal(ptr.To(c.Name + "-bootstrap")))
			secret := &corev1.Secret{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name+"-bootstrap"), secret)).To(Succeed())
			g.Expect(secret.Type).To(Equal(clusterv1.ClusterSecretType))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("the Flotilla Cluster has its finalizer, blocks a move while active, and waits for the control plane", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			current := &flotillav1.Cluster{}
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
			g.Expect(current.Finalizers).To(ContainElement(flotillav1.ClusterFinalizer))
			g.Expect(current.Annotations).To(HaveKey(clusterctlv1.BlockMoveAnnotation))
			g.Expect(current.Status.Phase).To(Equal(flotillav1.ClusterPhaseProvisioning))
			g.Expect(current.Status.Workers).To(Equal(flotillav1.WorkerStatus{Desired: 2}))
			g.Expect(current.Status.ObservedGeneration).To(Equal(current.Generation))
			cp := conditionOf(g, c, flotillav1.ControlPlaneReadyCondition)
			g.Expect(cp.Reason).To(Equal(flotillav1.WaitingForControlPlaneReason))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("the cluster becomes Ready when the control plane is available and the workers are ready", func(t *testing.T) {
		g := NewWithT(t)
		lcp := &controlplanev1.LocalControlPlane{}
		g.Expect(env.Client.Get(ctx, key(c, c.Name), lcp)).To(Succeed())
		lcp.Status.Version = "v1.36.3"
		meta.SetStatusCondition(&lcp.Status.Conditions, metav1.Condition{
			Type: controlplanev1.AvailableCondition, Status: metav1.ConditionTrue, Reason: controlplanev1.AvailableReason})
		g.Expect(env.Client.Status().Update(ctx, lcp)).To(Succeed())

		g.Eventually(func(g Gomega) {
			g.Expect(conditionOf(g, c, flotillav1.ControlPlaneReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		}, timeout, interval).Should(Succeed())
		g.Expect(conditionOf(g, c, flotillav1.ReadyCondition).Reason).To(Equal(flotillav1.WaitingForWorkersReason))

		setMachineDeploymentStatus(g, c, c.Name+"-md-0", 2)
		g.Eventually(func(g Gomega) {
			ready := conditionOf(g, c, flotillav1.ReadyCondition)
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
			current := &flotillav1.Cluster{}
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
			g.Expect(current.Status.Phase).To(Equal(flotillav1.ClusterPhaseReady))
			g.Expect(current.Status.KubernetesVersion).To(Equal("v1.36.3"))
			g.Expect(current.Status.Workers).To(Equal(flotillav1.WorkerStatus{Desired: 2, Ready: 2}))
		}, timeout, interval).Should(Succeed())
	})
}

// setMachineDeploymentStatus writes the status CAPI's MachineDeployment controller would write
// once n machines are ready and up to date.
func setMachineDeploymentStatus(g Gomega, c *flotillav1.Cluster, name string, n int32) {
	ctx := context.Background()
	g.Eventually(func(g Gomega) {
		md := &clusterv1.MachineDeployment{}
		g.Expect(env.Client.Get(ctx, key(c, name), md)).To(Succeed())
		md.Status.ObservedGeneration = md.Generation
		md.Status.Replicas = ptr.To(n)
		md.Status.ReadyReplicas = ptr.To(n)
		md.Status.AvailableReplicas = ptr.To(n)
		md.Status.UpToDateReplicas = ptr.To(n)
		g.Expect(env.Client.Status().Update(ctx, md)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

func TestInvalidMachineGroupRef(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fixture(t, g, group("md-0", 1, "missing"))

	t.Run("a machineGroupRef naming a missing config is an invalid spec naming the field", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			ready := conditionOf(g, c, flotillav1.ReadyCondition)
			g.Expect(ready.Reason).To(Equal(flotillav1.InvalidSpecReason))
			g.Expect(ready.Message).To(ContainSubstring("spec.workerNodeGroups[0].machineGroupRef.name"))
			g.Expect(ready.Message).To(ContainSubstring(`no LocalMachineConfig named "missing"`))
			workers := conditionOf(g, c, flotillav1.WorkersReadyCondition)
			g.Expect(workers.Reason).To(Equal(flotillav1.InvalidSpecReason))
		}, timeout, interval).Should(Succeed())
		current := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
		g.Expect(current.Status.Phase).To(Equal(flotillav1.ClusterPhaseFailed))
		g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, key(c, c.Name), &clusterv1.Cluster{}))).To(BeTrue(),
			"nothing is created from an invalid spec")
	})

	t.Run("creating the missing config lets the cluster proceed", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Create(ctx, &infrav1.LocalMachineConfig{
			ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: c.Namespace}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), &clusterv1.MachineDeployment{})).To(Succeed())
			g.Expect(conditionOf(g, c, flotillav1.ReadyCondition).Reason).NotTo(Equal(flotillav1.InvalidSpecReason))
		}, timeout, interval).Should(Succeed())
	})
}

func TestWorkerGroupChanges(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fixture(t, g, group("md-0", 2, "small"), group("md-1", 1, "small"))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), &clusterv1.MachineDeployment{})).To(Succeed())
		g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-1"), &clusterv1.MachineDeployment{})).To(Succeed())
	}, timeout, interval).Should(Succeed())

	t.Run("changing a worker count changes the MachineDeployment's replicas", func(t *testing.T) {
		g := NewWithT(t)
		updateCluster(g, c, func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Count = 3 })
		g.Eventually(func(g Gomega) {
			md := &clusterv1.MachineDeployment{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), md)).To(Succeed())
			g.Expect(md.Spec.Replicas).To(Equal(ptr.To[int32](3)))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("removing a group deletes its MachineDeployment and then its template", func(t *testing.T) {
		g := NewWithT(t)
		updateCluster(g, c, func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups = c.Spec.WorkerNodeGroups[:1] })
		g.Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, key(c, c.Name+"-md-1"), &clusterv1.MachineDeployment{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, key(c, c.Name+"-md-1"), &infrav1.LocalMachineTemplate{}))).To(BeTrue())
		}, timeout, interval).Should(Succeed())
		g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), &clusterv1.MachineDeployment{})).To(Succeed(), "the other group stays")
	})
}

func updateCluster(g Gomega, c *flotillav1.Cluster, mutate func(*flotillav1.Cluster)) {
	g.Eventually(func(g Gomega) {
		current := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(context.Background(), ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
		mutate(current)
		g.Expect(env.Client.Update(context.Background(), current)).To(Succeed())
	}, timeout, interval).Should(Succeed())
}

func TestDeleteCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fixture(t, g, group("md-0", 1, "small"))
	capi := &clusterv1.Cluster{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
	}, timeout, interval).Should(Succeed())

	// Stand in for CAPI's finalizer, which holds the CAPI Cluster until machines and control
	// plane are gone.
	const capiFinalizer = "test.flotilla.dev/capi"
	patch := ctrlclient.MergeFrom(capi.DeepCopy())
	capi.Finalizers = append(capi.Finalizers, capiFinalizer)
	g.Expect(env.Client.Patch(ctx, capi, patch)).To(Succeed())

	g.Expect(env.Client.Delete(ctx, c)).To(Succeed())

	t.Run("deleting the Flotilla Cluster deletes the CAPI Cluster and waits for it", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
			g.Expect(capi.DeletionTimestamp.IsZero()).To(BeFalse())
			ready := conditionOf(g, c, flotillav1.ReadyCondition)
			g.Expect(ready.Reason).To(Equal(flotillav1.DeletingReason))
		}, timeout, interval).Should(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), &flotillav1.Cluster{})).To(Succeed())
		}, 2*time.Second, interval).Should(Succeed())
	})

	t.Run("the Flotilla Cluster goes once the CAPI Cluster is gone", func(t *testing.T) {
		g := NewWithT(t)
		patch := ctrlclient.MergeFrom(capi.DeepCopy())
		capi.Finalizers = nil
		g.Expect(env.Client.Patch(ctx, capi, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, key(c, c.Name), &clusterv1.Cluster{}))).To(BeTrue())
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), &flotillav1.Cluster{}))).To(BeTrue())
		}, timeout, interval).Should(Succeed())
	})
}

// TestPreDeleteHooksHoldTheTeardownBack deletes a Cluster carrying two pre-delete hooks: the
// CAPI Cluster (its workers and control plane) is not deleted but marked for teardown, and the
// Ready condition names the hooks, until the last hook is removed.
func TestPreDeleteHooksHoldTheTeardownBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fixture(t, g, group("md-0", 1, "small"))
	capi := &clusterv1.Cluster{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	updateCluster(g, c, func(c *flotillav1.Cluster) {
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, predelete.Annotation("addons"), "")
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, predelete.Annotation("packages"), "")
	})
	g.Expect(env.Client.Delete(ctx, c)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
		g.Expect(capi.Annotations).To(HaveKey(flotillav1.TeardownAnnotation))
		ready := conditionOf(g, c, flotillav1.ReadyCondition)
		g.Expect(ready.Reason).To(Equal(flotillav1.DeletingReason))
		g.Expect(ready.Message).To(ContainSubstring("waiting for addons, packages to uninstall"))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
		g.Expect(capi.DeletionTimestamp.IsZero()).To(BeTrue(), "the CAPI Cluster is not deleted while hooks are set")
	}, 2*time.Second, interval).Should(Succeed())

	updateCluster(g, c, func(c *flotillav1.Cluster) { delete(c.Annotations, predelete.Annotation("addons")) })
	g.Consistently(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
		g.Expect(capi.DeletionTimestamp.IsZero()).To(BeTrue(), "one hook is enough to hold it")
	}, time.Second, interval).Should(Succeed())
	updateCluster(g, c, func(c *flotillav1.Cluster) { delete(c.Annotations, predelete.Annotation("packages")) })
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), &flotillav1.Cluster{}))
	}, timeout, interval).Should(BeTrue(), "the teardown goes on once the last hook is removed")
}

func TestPause(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fixture(t, g, group("md-0", 1, "small"))
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), &clusterv1.MachineDeployment{})).To(Succeed())
	}, timeout, interval).Should(Succeed())

	t.Run("a paused cluster pauses its CAPI Cluster and stops changing it", func(t *testing.T) {
		g := NewWithT(t)
		updateCluster(g, c, func(c *flotillav1.Cluster) {
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, clusterv1.PausedAnnotation, "")
		})
		g.Eventually(func(g Gomega) {
			capi := &clusterv1.Cluster{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
			g.Expect(capi.Spec.Paused).To(Equal(ptr.To(true)))
			g.Expect(conditionOf(g, c, flotillav1.PausedCondition).Status).To(Equal(metav1.ConditionTrue))
			g.Expect(conditionOf(g, c, flotillav1.ReadyCondition).Reason).To(Equal(flotillav1.PausedReason))
		}, timeout, interval).Should(Succeed())

		updateCluster(g, c, func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Count = 4 })
		g.Consistently(func(g Gomega) {
			md := &clusterv1.MachineDeployment{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), md)).To(Succeed())
			g.Expect(md.Spec.Replicas).To(Equal(ptr.To[int32](1)))
		}, 2*time.Second, interval).Should(Succeed())
	})

	t.Run("resuming unpauses the CAPI Cluster and applies what changed meanwhile", func(t *testing.T) {
		g := NewWithT(t)
		updateCluster(g, c, func(c *flotillav1.Cluster) { delete(c.Annotations, clusterv1.PausedAnnotation) })
		g.Eventually(func(g Gomega) {
			capi := &clusterv1.Cluster{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
			g.Expect(capi.Spec.Paused).To(BeNil())
			md := &clusterv1.MachineDeployment{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), md)).To(Succeed())
			g.Expect(md.Spec.Replicas).To(Equal(ptr.To[int32](4)))
			g.Expect(conditionOf(g, c, flotillav1.PausedCondition).Status).To(Equal(metav1.ConditionFalse))
		}, timeout, interval).Should(Succeed())
	})
}

// TestStandsAsideForMove plays clusterctl move's part on the source and the target management
// cluster: pause the CAPI Cluster, wait for block-move to go, delete, recreate paused, unpause.
func TestStandsAsideForMove(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := fixture(t, g, group("md-0", 1, "small"))
	capi := &clusterv1.Cluster{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
		current := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
		g.Expect(current.Annotations).To(HaveKey(clusterctlv1.BlockMoveAnnotation))
	}, timeout, interval).Should(Succeed())
	clusterctl := ctrlclient.WithFieldOwner(env.Client, "clusterctl")

	t.Run("a CAPI Cluster paused by someone else makes the reconciler hold and unblock the move, even with an invalid spec", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Delete(ctx, &infrav1.LocalMachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: c.Namespace}})).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(conditionOf(g, c, flotillav1.ReadyCondition).Reason).To(Equal(flotillav1.InvalidSpecReason))
		}, timeout, interval).Should(Succeed())
		g.Expect(clusterctl.Patch(ctx, capi, ctrlclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":true}}`)))).To(Succeed())
		g.Eventually(func(g Gomega) {
			current := &flotillav1.Cluster{}
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
			g.Expect(current.Annotations).NotTo(HaveKey(clusterctlv1.BlockMoveAnnotation))
			g.Expect(current.Annotations).To(HaveKey(flotillav1.CAPIPausedAnnotation))
			g.Expect(conditionOf(g, c, flotillav1.PausedCondition).Status).To(Equal(metav1.ConditionTrue))
		}, timeout, interval).Should(Succeed())
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
		g.Expect(capi.Spec.Paused).To(Equal(ptr.To(true)), "Flotilla leaves a pause it did not set alone")
	})

	t.Run("a holding reconciler does not recreate the CAPI Cluster the move deleted", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(env.Client.Delete(ctx, capi)).To(Succeed())
		g.Consistently(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, key(c, c.Name), &clusterv1.Cluster{}))).To(BeTrue())
		}, 2*time.Second, interval).Should(Succeed())
	})

	t.Run("the reconciler resumes once the CAPI Cluster is back and unpaused", func(t *testing.T) {
		g := NewWithT(t)
		current := &flotillav1.Cluster{}
		g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
		moved := &clusterv1.Cluster{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: map[string]string{flotillav1.ClusterNameLabel: c.Name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: flotillav1.GroupVersion.String(), Kind: "Cluster",
					Name: c.Name, UID: current.UID, Controller: ptr.To(true)}}},
			Spec: clusterv1.ClusterSpec{
				Paused: ptr.To(true),
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: infrav1.GroupVersion.Group, Kind: "LocalCluster", Name: c.Name},
				ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: controlplanev1.GroupVersion.Group, Kind: "LocalControlPlane", Name: c.Name},
			},
		}
		g.Expect(clusterctl.Create(ctx, moved)).To(Succeed())
		updateCluster(g, c, func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Count = 2 })
		g.Consistently(func(g Gomega) {
			md := &clusterv1.MachineDeployment{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), md)).To(Succeed())
			g.Expect(md.Spec.Replicas).To(Equal(ptr.To[int32](1)))
		}, 2*time.Second, interval).Should(Succeed(), "still holding while the CAPI Cluster is paused")

		g.Expect(env.Client.Create(ctx, &infrav1.LocalMachineConfig{ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: c.Namespace}})).To(Succeed())
		g.Expect(clusterctl.Patch(ctx, moved, ctrlclient.RawPatch(types.MergePatchType, []byte(`{"spec":{"paused":null}}`)))).To(Succeed())
		g.Eventually(func(g Gomega) {
			current := &flotillav1.Cluster{}
			g.Expect(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), current)).To(Succeed())
			g.Expect(current.Annotations).To(HaveKey(clusterctlv1.BlockMoveAnnotation))
			g.Expect(current.Annotations).NotTo(HaveKey(flotillav1.CAPIPausedAnnotation))
			md := &clusterv1.MachineDeployment{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name+"-md-0"), md)).To(Succeed())
			g.Expect(md.Spec.Replicas).To(Equal(ptr.To[int32](2)))
			capi := &clusterv1.Cluster{}
			g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
			g.Expect(capi.Labels).To(HaveKeyWithValue(flotillav1.ClusterNameLabel, c.Name))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("a Cluster that clusterctl move deletes lets go without deleting its CAPI Cluster", func(t *testing.T) {
		g := NewWithT(t)
		updateCluster(g, c, func(c *flotillav1.Cluster) {
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, clusterctlv1.DeleteForMoveAnnotation, "")
		})
		g.Expect(env.Client.Delete(ctx, c)).To(Succeed())
		g.Eventually(func(g Gomega) {
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), &flotillav1.Cluster{}))).To(BeTrue())
		}, timeout, interval).Should(Succeed())
		capi := &clusterv1.Cluster{}
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
		g.Expect(capi.DeletionTimestamp.IsZero()).To(BeTrue())
	})
}

func TestWebhookThroughTheAPIServer(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		create     func(*flotillav1.Cluster)
		update     func(*flotillav1.Cluster)
		wantField  string
		wantDetail string
	}{
		{
			name:       "creating a cluster with an unsupported version is rejected naming the field",
			create:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.20" },
			wantField:  "spec.kubernetesVersion",
			wantDetail: "is not supported; use one of",
		},
		{
			name:       "changing the datacenter of a cluster is rejected naming the field",
			update:     func(c *flotillav1.Cluster) { c.Spec.DatacenterRef.Name = "elsewhere" },
			wantField:  "spec.datacenterRef",
			wantDetail: "is immutable",
		},
		{
			name:       "skipping a minor version is rejected naming the field",
			create:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.35" },
			update:     func(c *flotillav1.Cluster) { c.Spec.KubernetesVersion = "1.37" },
			wantField:  "spec.kubernetesVersion",
			wantDetail: "not supported",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newCluster(env.NewNamespace(t))
			if tt.create != nil {
				tt.create(c)
			}
			err := env.Client.Create(ctx, c)
			if tt.update != nil {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(c.Spec.ClusterNetwork.Pods).To(Equal([]string{flotillav1.DefaultPodCIDR}), "defaulted by the webhook")
				// A merge patch: the reconciler adds its finalizer meanwhile.
				patch := ctrlclient.MergeFrom(c.DeepCopy())
				tt.update(c)
				err = env.Client.Patch(ctx, c, patch)
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			causes := err.(apierrors.APIStatus).Status().Details.Causes
			g.Expect(causes).To(ContainElement(HaveField("Field", tt.wantField)))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantDetail))
		})
	}
}
