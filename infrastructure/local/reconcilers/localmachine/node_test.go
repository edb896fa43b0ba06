package localmachine

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

func testMachine(labels map[string]string) *clusterv1.Machine {
	return &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "work-md-0-abcde", Labels: labels}}
}

func TestDesiredNode(t *testing.T) {
	tests := []struct {
		name          string
		machineLabels map[string]string
		capacity      corev1.ResourceList
		wantLabels    map[string]string
		wantCapacity  corev1.ResourceList
	}{
		{
			name: "a worker gets the simulated, worker role and well-known labels and the default capacity",
			wantLabels: map[string]string{
				infrav1.SimulatedNodeLabel:       "true",
				"node-role.kubernetes.io/worker": "",
				corev1.LabelHostname:             "work-md-0-abcde",
				corev1.LabelOSStable:             "linux",
				corev1.LabelArchStable:           "amd64",
			},
			wantCapacity: infrav1.DefaultCapacity(),
		},
		{
			name: "a control plane machine gets the control-plane role",
			machineLabels: map[string]string{
				clusterv1.MachineControlPlaneLabel: "",
			},
			wantLabels: map[string]string{
				infrav1.SimulatedNodeLabel:              "true",
				"node-role.kubernetes.io/control-plane": "",
				corev1.LabelHostname:                    "work-md-0-abcde",
				corev1.LabelOSStable:                    "linux",
				corev1.LabelArchStable:                  "amd64",
			},
			wantCapacity: infrav1.DefaultCapacity(),
		},
		{
			name: "machine labels in the domains CAPI syncs to Nodes are copied, others are not",
			machineLabels: map[string]string{
				"node-role.kubernetes.io/ingress":     "",
				"node.cluster.x-k8s.io/pool":          "blue",
				"node-restriction.kubernetes.io/zone": "a",
				clusterv1.ClusterNameLabel:            "work",
				"team":                                "a",
			},
			wantLabels: map[string]string{
				infrav1.SimulatedNodeLabel:            "true",
				"node-role.kubernetes.io/worker":      "",
				"node-role.kubernetes.io/ingress":     "",
				"node.cluster.x-k8s.io/pool":          "blue",
				"node-restriction.kubernetes.io/zone": "a",
				corev1.LabelHostname:                  "work-md-0-abcde",
				corev1.LabelOSStable:                  "linux",
				corev1.LabelArchStable:                "amd64",
			},
			wantCapacity: infrav1.DefaultCapacity(),
		},
		{
			name:     "capacity from the spec overrides the defaults resource by resource",
			capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			wantLabels: map[string]string{
				infrav1.SimulatedNodeLabel:       "true",
				"node-role.kubernetes.io/worker": "",
				corev1.LabelHostname:             "work-md-0-abcde",
				corev1.LabelOSStable:             "linux",
				corev1.LabelArchStable:           "amd64",
			},
			wantCapacity: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("16Gi"),
				corev1.ResourcePods:   resource.MustParse("110"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			localMachine := &infrav1.LocalMachine{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "work-md-0-xyz"},
				Spec:       infrav1.LocalMachineSpec{Capacity: tt.capacity},
			}

			node := desiredNode(testMachine(tt.machineLabels), localMachine)

			g.Expect(node.Name).To(Equal("work-md-0-abcde"))
			g.Expect(node.Labels).To(Equal(tt.wantLabels))
			g.Expect(node.Annotations).To(Equal(map[string]string{
				infrav1.KwokNodeAnnotation:    "fake",
				infrav1.MachineNameAnnotation: "team-a/work-md-0-xyz",
			}))
			g.Expect(node.Spec.ProviderID).To(Equal("local://team-a/work-md-0-abcde"))
			g.Expect(node.Spec.Taints).To(BeEmpty())
			for name, want := range tt.wantCapacity {
				g.Expect(node.Status.Capacity[name].Equal(want)).To(BeTrue(), "capacity %s", name)
				g.Expect(node.Status.Allocatable[name].Equal(want)).To(BeTrue(), "allocatable %s", name)
			}
			g.Expect(node.Status.Capacity).To(HaveLen(len(tt.wantCapacity)))
			g.Expect(node.Status.Addresses).To(ConsistOf(
				corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: infrav1.NodeAddressIP},
				corev1.NodeAddress{Type: corev1.NodeHostName, Address: "work-md-0-abcde"},
			))
		})
	}
}

func TestDesiredNodeDoesNotShareCapacityWithTheSpec(t *testing.T) {
	g := NewWithT(t)
	spec := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	localMachine := &infrav1.LocalMachine{Spec: infrav1.LocalMachineSpec{Capacity: spec}}

	node := desiredNode(testMachine(nil), localMachine)
	node.Status.Capacity[corev1.ResourceCPU] = resource.MustParse("64")

	g.Expect(spec[corev1.ResourceCPU]).To(Equal(resource.MustParse("2")))
	g.Expect(node.Status.Allocatable[corev1.ResourceCPU]).To(Equal(resource.MustParse("2")))
}

func TestMissingMetadata(t *testing.T) {
	desired := desiredNode(testMachine(nil), &infrav1.LocalMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "m"}})
	tests := []struct {
		name            string
		node            *corev1.Node
		wantLabels      map[string]string
		wantAnnotations map[string]string
	}{
		{
			name: "a Node with everything, and more, lacks nothing",
			node: func() *corev1.Node {
				n := desired.DeepCopy()
				n.Labels["extra"] = "kept"
				n.Annotations["kwok.x-k8s.io/status"] = "custom"
				return n
			}(),
		},
		{
			name: "a Node whose labels were removed gets them back",
			node: func() *corev1.Node {
				n := desired.DeepCopy()
				n.Labels = nil
				return n
			}(),
			wantLabels: desired.Labels,
		},
		{
			name: "a Node whose kwok annotation changed gets it back",
			node: func() *corev1.Node {
				n := desired.DeepCopy()
				n.Annotations[infrav1.KwokNodeAnnotation] = "real"
				return n
			}(),
			wantAnnotations: map[string]string{infrav1.KwokNodeAnnotation: "fake"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			labels, annotations := missingMetadata(tt.node, desired)
			g.Expect(labels).To(Equal(tt.wantLabels))
			g.Expect(annotations).To(Equal(tt.wantAnnotations))
		})
	}
}

func TestNodeToLocalMachine(t *testing.T) {
	tests := []struct {
		name       string
		annotation string
		want       []ctrlclient.ObjectKey
	}{
		{name: "a simulated Node maps to the LocalMachine that created it", annotation: "team-a/work-md-0-xyz", want: []ctrlclient.ObjectKey{{Namespace: "team-a", Name: "work-md-0-xyz"}}},
		{name: "a Node without the annotation maps to nothing", annotation: ""},
		{name: "a malformed annotation maps to nothing", annotation: "work-md-0-xyz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			node := &corev1.Node{}
			if tt.annotation != "" {
				node.Annotations = map[string]string{infrav1.MachineNameAnnotation: tt.annotation}
			}
			var got []ctrlclient.ObjectKey
			for _, req := range nodeToLocalMachine(context.Background(), node) {
				got = append(got, req.NamespacedName)
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestNodeReadyChangedDropsHeartbeats(t *testing.T) {
	g := NewWithT(t)
	notReady := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse}}}}
	ready := &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	heartbeat := ready.DeepCopy()
	heartbeat.Status.Conditions[0].LastHeartbeatTime = metav1.Now()

	p := nodeReadyChanged()
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: notReady, ObjectNew: ready})).To(BeTrue())
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: ready, ObjectNew: heartbeat})).To(BeFalse())
	g.Expect(p.Create(event.CreateEvent{Object: ready})).To(BeTrue())
	g.Expect(p.Delete(event.DeleteEvent{Object: ready})).To(BeTrue())
}

func TestDesiredRealNodeLeavesKubeletItsLabelsAndSetsTheRest(t *testing.T) {
	g := NewWithT(t)
	machine := testMachine(map[string]string{"node-role.kubernetes.io/web": "", "app": "not synced"})
	lm := &infrav1.LocalMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "work-real-xyz"},
		Spec:       infrav1.LocalMachineSpec{Node: infrav1.RealNode, NodeLabels: map[string]string{"example.com/tier": "web", "topology.kubernetes.io/zone": "here"}},
	}
	desired := desiredRealNode(machine, lm)
	g.Expect(desired.Labels).To(Equal(map[string]string{
		infrav1.SimulatedNodeLabel:       "false",
		"node-role.kubernetes.io/worker": "",
		"node-role.kubernetes.io/web":    "",
		"example.com/tier":               "web",
		"topology.kubernetes.io/zone":    "here",
	}))
	g.Expect(desired.Annotations).To(Equal(map[string]string{infrav1.MachineNameAnnotation: "team-a/work-real-xyz"}), "no kwok annotation: kubelet plays this Node")
	g.Expect(realNodeKubeletLabels(desired)).To(Equal(map[string]string{
		infrav1.SimulatedNodeLabel: "false",
		"example.com/tier":         "web",
	}), "kubelet may not set labels of the kubernetes.io and k8s.io domains; the reconciler does")
}
