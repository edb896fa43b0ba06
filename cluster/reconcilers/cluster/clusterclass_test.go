package cluster_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// The tests play Cluster API's ClusterClass controller: they write the status it would write
// (the schemas of the class's variables, VariablesReady), which the Cluster webhook needs to
// validate variables.

// templateRef names a template of a provider; no CRD serves infrastructure.example.com.
func templateRef(apiVersion, kind, name string) clusterv1.ClusterClassTemplateReference {
	return clusterv1.ClusterClassTemplateReference{APIVersion: apiVersion, Kind: kind, Name: name}
}

// Infrastructure templates of ClusterClasses: the local provider's machine template, whose CRD is
// installed (the reconciler only checks that a kind is served), and one of a provider that is
// not installed.
const (
	servedInfra    = "infrastructure.flotilla.dev/v1alpha1 LocalMachineTemplate"
	notServedInfra = "infrastructure.example.com/v1beta2 DevMachineTemplate"
)

// newClass creates a reconciled ClusterClass "dev" in ns, with one worker class "default-worker"
// and one variable "replicaCount", an integer from 1 to 5. Its templates are a
// KubeadmConfigTemplate and a KubeadmControlPlaneTemplate (served: their CRDs are Flotilla's) and
// infrastructure templates of infra ("apiVersion Kind").
func newClass(t *testing.T, g Gomega, ns, infra string) *clusterv1.ClusterClass {
	t.Helper()
	ctx := context.Background()
	infraAPIVersion, infraKind, _ := strings.Cut(infra, " ")
	cc := &clusterv1.ClusterClass{
		ObjectMeta: metav1.ObjectMeta{Name: "dev", Namespace: ns},
		Spec: clusterv1.ClusterClassSpec{
			Infrastructure: clusterv1.InfrastructureClass{TemplateRef: templateRef(infraAPIVersion, infraKind, "dev")},
			ControlPlane: clusterv1.ControlPlaneClass{
				TemplateRef: templateRef("controlplane.cluster.x-k8s.io/v1beta2", "KubeadmControlPlaneTemplate", "dev"),
				MachineInfrastructure: clusterv1.ControlPlaneClassMachineInfrastructureTemplate{
					TemplateRef: templateRef(infraAPIVersion, infraKind, "dev-cp")},
			},
			Workers: clusterv1.WorkersClass{MachineDeployments: []clusterv1.MachineDeploymentClass{{
				Class:          "default-worker",
				Bootstrap:      clusterv1.MachineDeploymentClassBootstrapTemplate{TemplateRef: templateRef("bootstrap.cluster.x-k8s.io/v1beta2", "KubeadmConfigTemplate", "dev-md")},
				Infrastructure: clusterv1.MachineDeploymentClassInfrastructureTemplate{TemplateRef: templateRef(infraAPIVersion, infraKind, "dev-md")},
			}}},
		},
	}
	g.Expect(env.Client.Create(ctx, cc)).To(Succeed())
	cc.Status = clusterv1.ClusterClassStatus{
		ObservedGeneration: cc.Generation,
		Conditions: []metav1.Condition{{Type: clusterv1.ClusterClassVariablesReadyCondition, Status: metav1.ConditionTrue,
			Reason: clusterv1.ClusterClassVariablesReadyReason, LastTransitionTime: metav1.Now()}},
		Variables: []clusterv1.ClusterClassStatusVariable{{
			Name: "replicaCount",
			Definitions: []clusterv1.ClusterClassStatusVariableDefinition{{
				From:     clusterv1.VariableDefinitionFromInline,
				Required: ptr.To(false),
				Schema: clusterv1.VariableSchema{OpenAPIV3Schema: clusterv1.JSONSchemaProps{
					Type: "integer", Minimum: ptr.To[int64](1), Maximum: ptr.To[int64](5)}},
			}},
		}},
	}
	g.Expect(env.Client.Status().Update(ctx, cc)).To(Succeed())
	return cc
}

// topologyCluster is a Cluster of ClusterClass "dev" with one group of 2 workers, named after
// ns: cluster names are unique across the namespaces of an API server.
func topologyCluster(ns string, variables ...flotillav1.TopologyVariable) *flotillav1.Cluster {
	return &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "c-" + ns, Namespace: ns},
		Spec: flotillav1.ClusterSpec{
			KubernetesVersion: "1.36",
			Topology:          &flotillav1.Topology{Class: "dev", Variables: variables},
			WorkerNodeGroups:  []flotillav1.WorkerNodeGroup{{Name: "md-0", Count: 2, Class: "default-worker", Labels: map[string]string{"tier": "web"}}},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	}
}

func variable(name, value string) flotillav1.TopologyVariable {
	return flotillav1.TopologyVariable{Name: name, Value: runtime.RawExtension{Raw: []byte(value)}}
}

func TestClusterClassClusterBecomesACAPIClusterWithATopology(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	newClass(t, g, ns, servedInfra)
	c := topologyCluster(ns, variable("replicaCount", "3"))
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())

	capi := &clusterv1.Cluster{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Expect(capi.Spec.InfrastructureRef.IsDefined()).To(BeFalse(), "the topology controller sets it")
	g.Expect(capi.Spec.ControlPlaneRef.IsDefined()).To(BeFalse())
	topo := capi.Spec.Topology
	g.Expect(topo.ClassRef).To(Equal(clusterv1.ClusterClassRef{Name: "dev"}))
	g.Expect(topo.Version).To(Equal("v1.36.3"))
	g.Expect(topo.ControlPlane.Replicas).To(Equal(ptr.To[int32](1)))
	g.Expect(topo.Variables).To(Equal([]clusterv1.ClusterVariable{{Name: "replicaCount", Value: apiextensionsv1.JSON{Raw: []byte("3")}}}))
	g.Expect(topo.Workers.MachineDeployments).To(HaveLen(1))
	md := topo.Workers.MachineDeployments[0]
	g.Expect(md.Class).To(Equal("default-worker"))
	g.Expect(md.Name).To(Equal("md-0"))
	g.Expect(md.Replicas).To(Equal(ptr.To[int32](2)))
	g.Expect(md.Metadata.Labels).To(Equal(map[string]string{"tier": "web",
		flotillav1.ClusterNameLabel: c.Name, flotillav1.WorkerNodeGroupLabel: "md-0"}))
	g.Expect(md.Metadata.Annotations).To(HaveKeyWithValue(clusterv1.MachineSetSkipPreflightChecksAnnotation, "ControlPlaneIsStable"))

	t.Run("until Cluster API reports on it, the control plane is awaited", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func(g Gomega) {
			cond := conditionOf(g, c, flotillav1.ControlPlaneReadyCondition)
			g.Expect(cond.Reason).To(Equal(flotillav1.WaitingForControlPlaneReason))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("scaling the workers changes the topology", func(t *testing.T) {
		g := NewWithT(t)
		updateCluster(g, c, func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Count = 4 })
		g.Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key(c, c.Name), capi)).To(Succeed())
			g.Expect(capi.Spec.Topology.Workers.MachineDeployments[0].Replicas).To(Equal(ptr.To[int32](4)))
		}, timeout, interval).Should(Succeed())
	})
}

func TestClusterClassWhoseProviderIsNotInstalledSaysWhatToInstall(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	newClass(t, g, ns, notServedInfra)
	c := topologyCluster(ns)
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())

	g.Eventually(func(g Gomega) {
		cond := conditionOf(g, c, flotillav1.ControlPlaneReadyCondition)
		g.Expect(cond.Reason).To(Equal(flotillav1.ProviderNotInstalledReason))
		g.Expect(cond.Message).To(ContainSubstring("DevMachineTemplate infrastructure.example.com/v1beta2 (infrastructure of the cluster)"))
		g.Expect(cond.Message).To(ContainSubstring("clusterctl init --infrastructure"))
		g.Expect(conditionOf(g, c, flotillav1.ReadyCondition).Reason).To(Equal(flotillav1.ProviderNotInstalledReason))
	}, timeout, interval).Should(Succeed())
}

func TestClusterClassWebhook(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		noClass    bool
		mutate     func(*flotillav1.Cluster)
		wantField  string
		wantDetail string
	}{
		{
			name:       "a ClusterClass that does not exist is refused naming the class",
			noClass:    true,
			wantField:  "spec.topology.class",
			wantDetail: `no ClusterClass of that name in namespace`,
		},
		{
			name: "a variable that fails its schema is refused naming the variable",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.Topology.Variables = []flotillav1.TopologyVariable{variable("replicaCount", "9")}
			},
			wantField:  "spec.topology.variables[replicaCount].value",
			wantDetail: "should be less than or equal to 5",
		},
		{
			name: "a variable the class does not define is refused naming it",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.Topology.Variables = []flotillav1.TopologyVariable{variable("colour", `"blue"`)}
			},
			wantField:  "spec.topology.variables[colour]",
			wantDetail: "not defined",
		},
		{
			name:       "a worker class the class does not have is refused naming the group",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Class = "gpu" },
			wantField:  "spec.workerNodeGroups[0].class",
			wantDetail: "gpu",
		},
		{
			name:       "a group without a class is refused naming the field",
			mutate:     func(c *flotillav1.Cluster) { c.Spec.WorkerNodeGroups[0].Class = "" },
			wantField:  "spec.workerNodeGroups[0].class",
			wantDetail: "name the ClusterClass's worker class",
		},
		{
			name: "a datacenterRef besides a topology is refused",
			mutate: func(c *flotillav1.Cluster) {
				c.Spec.DatacenterRef = flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "local"}
			},
			wantField:  "spec.datacenterRef",
			wantDetail: "remove datacenterRef",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := env.NewNamespace(t)
			if !tt.noClass {
				newClass(t, g, ns, servedInfra)
			}
			c := topologyCluster(ns)
			if tt.mutate != nil {
				tt.mutate(c)
			}
			err := env.Client.Create(ctx, c)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			causes := err.(apierrors.APIStatus).Status().Details.Causes
			g.Expect(causes).To(ContainElement(HaveField("Field", tt.wantField)), "%v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.wantDetail))
			g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(c), &flotillav1.Cluster{}))).To(BeTrue(), "nothing stored")
		})
	}

	t.Run("the class of a cluster cannot change", func(t *testing.T) {
		g := NewWithT(t)
		ns := env.NewNamespace(t)
		newClass(t, g, ns, servedInfra)
		c := topologyCluster(ns)
		g.Expect(env.Client.Create(ctx, c)).To(Succeed())
		patch := ctrlclient.MergeFrom(c.DeepCopy())
		c.Spec.Topology.Class = "other"
		err := env.Client.Patch(ctx, c, patch)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.topology.class: Forbidden: is immutable"))
	})
}
