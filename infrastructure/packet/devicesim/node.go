package devicesim

import (
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
	"github.com/flotilla-dev/flotilla/pkg/controlplane"
)

// What kubeadm puts on control plane Nodes.
const (
	controlPlaneRoleLabel = "node-role.kubernetes.io/control-plane"
	excludeLBLabel        = "node.kubernetes.io/exclude-from-external-load-balancers"
)

// desiredNode is the Node a device's kubelet registers: named as nodeRegistration says, with
// the kubelet's --provider-id and --node-labels, kubeadm's control plane label and taint when
// controlPlane, the device's addresses, and what makes kwok keep it Ready.
func desiredNode(d metal.Device, reg *nodeRegistration, version string, controlPlane bool) (*corev1.Node, error) {
	args, err := reg.kubeletArgs()
	if err != nil {
		return nil, err
	}
	name := reg.Name
	if name == "" {
		name = d.Hostname
	}
	labels := map[string]string{
		infrav1.SimulatedNodeLabel: "true",
		corev1.LabelHostname:       name,
		corev1.LabelOSStable:       "linux",
		corev1.LabelArchStable:     "amd64",
	}
	if v := args["node-labels"]; v != "" {
		for _, pair := range strings.Split(v, ",") {
			key, value, _ := strings.Cut(pair, "=")
			labels[key] = value
		}
	}
	var taints []corev1.Taint
	if controlPlane {
		labels[controlPlaneRoleLabel] = ""
		labels[excludeLBLabel] = ""
		taints = []corev1.Taint{{Key: controlPlaneRoleLabel, Effect: corev1.TaintEffectNoSchedule}}
	}
	if reg.Taints != nil {
		taints = nil
		for _, t := range *reg.Taints {
			taints = append(taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
		}
	}
	addresses := []corev1.NodeAddress{{Type: corev1.NodeHostName, Address: name}}
	for _, a := range d.IPAddresses {
		if a.AddressFamily != 4 || !a.Management {
			continue
		}
		kind := corev1.NodeInternalIP
		if a.Public {
			kind = corev1.NodeExternalIP
		}
		addresses = append(addresses, corev1.NodeAddress{Type: kind, Address: a.Address})
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("8"),
		corev1.ResourceMemory: resource.MustParse("32Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: map[string]string{infrav1.KwokNodeAnnotation: controlplane.KwokNodeAnnotationValue},
		},
		Spec: corev1.NodeSpec{ProviderID: args["provider-id"], Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Addresses:   addresses,
			NodeInfo:    corev1.NodeSystemInfo{KubeletVersion: version},
		},
	}, nil
}

func hostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}
