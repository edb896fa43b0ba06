package localmachine

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// Labels every simulated Node carries, beside infrav1.SimulatedNodeLabel.
const (
	workerRoleLabel       = "node-role.kubernetes.io/worker"
	controlPlaneRoleLabel = "node-role.kubernetes.io/control-plane"
)

// syncedLabelPrefixes are the Machine label domains CAPI keeps in sync on Nodes. The Node gets
// them at creation already, so it never exists without them.
var syncedLabelPrefixes = []string{
	"node-role.kubernetes.io/",
	"node-restriction.kubernetes.io/",
	"node.cluster.x-k8s.io/",
}

// ProviderID returns the provider ID of the machine: local://<namespace>/<name>.
func ProviderID(machine *clusterv1.Machine) string {
	return infrav1.ProviderIDPrefix + machine.Namespace + "/" + machine.Name
}

// capacity returns the capacity of a simulated Node: infrav1.DefaultCapacity() overridden by
// each resource that spec names.
func capacity(spec corev1.ResourceList) corev1.ResourceList {
	out := infrav1.DefaultCapacity()
	for name, quantity := range spec {
		out[name] = quantity.DeepCopy()
	}
	return out
}

// desiredNode returns the Node that plays machine in its workload cluster.
func desiredNode(machine *clusterv1.Machine, localMachine *infrav1.LocalMachine) *corev1.Node {
	labels := nodeLabels(machine, localMachine)
	labels[infrav1.SimulatedNodeLabel] = "true"
	labels[corev1.LabelHostname] = machine.Name
	labels[corev1.LabelOSStable] = "linux"
	labels[corev1.LabelArchStable] = "amd64" // what kwok reports in nodeInfo.architecture

	resources := capacity(localMachine.Spec.Capacity)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:   machine.Name,
			Labels: labels,
			Annotations: map[string]string{
				infrav1.KwokNodeAnnotation:    "fake",
				infrav1.MachineNameAnnotation: localMachine.Namespace + "/" + localMachine.Name,
			},
		},
		Spec: corev1.NodeSpec{
			ProviderID: ProviderID(machine),
		},
		Status: corev1.NodeStatus{
			Capacity:    resources,
			Allocatable: resources.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: infrav1.NodeAddressIP},
				{Type: corev1.NodeHostName, Address: machine.Name},
			},
			// What a kubelet of the Machine's version reports. kwok keeps a version the Node
			// already has, and CAPI compares it with the Machine's to call the Machine up to date.
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: machine.Spec.Version},
		},
	}
}

// desiredRealNode returns the labels and annotations the Node of a real node gets from the
// provider: kubelet registers the Node itself, with its status, and sets the labels it may set
// (realNodeKubeletLabels); the rest are patched on once it is there.
func desiredRealNode(machine *clusterv1.Machine, localMachine *infrav1.LocalMachine) *corev1.Node {
	labels := nodeLabels(machine, localMachine)
	labels[infrav1.SimulatedNodeLabel] = "false"
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        machine.Name,
		Labels:      labels,
		Annotations: map[string]string{infrav1.MachineNameAnnotation: localMachine.Namespace + "/" + localMachine.Name},
	}}
}

// realNodeKubeletLabels are the labels of desired that kubelet sets when it registers (with
// NodeRestriction, a kubelet may not set labels of the kubernetes.io and k8s.io domains but a
// few of its own), so that the Node is never without them, the simulated label first.
func realNodeKubeletLabels(desired *corev1.Node) map[string]string {
	out := map[string]string{}
	for key, value := range desired.Labels {
		domain, _, ok := strings.Cut(key, "/")
		if ok && (domain == "kubernetes.io" || strings.HasSuffix(domain, ".kubernetes.io") || domain == "k8s.io" || strings.HasSuffix(domain, ".k8s.io")) {
			continue
		}
		out[key] = value
	}
	return out
}

// nodeLabels returns the labels both kinds of Nodes get: the node role (worker, or
// control-plane for a control plane Machine), the Machine labels CAPI keeps in sync, and the
// worker node group's labels.
func nodeLabels(machine *clusterv1.Machine, localMachine *infrav1.LocalMachine) map[string]string {
	labels := map[string]string{}
	if util.IsControlPlaneMachine(machine) {
		labels[controlPlaneRoleLabel] = ""
	} else {
		labels[workerRoleLabel] = ""
	}
	for key, value := range machine.Labels {
		for _, prefix := range syncedLabelPrefixes {
			if strings.HasPrefix(key, prefix) {
				labels[key] = value
			}
		}
	}
	for key, value := range localMachine.Spec.NodeLabels {
		labels[key] = value
	}
	return labels
}

// missingMetadata returns the labels and annotations of desired that node lacks or holds with
// another value; nil maps when node has them all. Labels and annotations others add are kept.
func missingMetadata(node, desired *corev1.Node) (labels, annotations map[string]string) {
	for key, value := range desired.Labels {
		if current, ok := node.Labels[key]; !ok || current != value {
			if labels == nil {
				labels = map[string]string{}
			}
			labels[key] = value
		}
	}
	for key, value := range desired.Annotations {
		if current, ok := node.Annotations[key]; !ok || current != value {
			if annotations == nil {
				annotations = map[string]string{}
			}
			annotations[key] = value
		}
	}
	return labels, annotations
}

// nodeReady returns the Node's Ready condition, or nil when it has none yet.
func nodeReady(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
