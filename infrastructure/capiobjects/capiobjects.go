package capiobjects

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// GroupName is the name of a worker node group's MachineDeployment and of its templates:
// <cluster>-<group>.
func GroupName(cluster, group string) string { return cluster + "-" + group }

// OwnedLabels are the labels of every object Flotilla creates for cluster c: Flotilla's and
// Cluster API's cluster-name labels.
func OwnedLabels(c *flotillav1.Cluster) map[string]string {
	return map[string]string{
		flotillav1.ClusterNameLabel: c.Name,
		clusterv1.ClusterNameLabel:  c.Name,
	}
}

// Workers is what a provider gives a worker node group's MachineDeployment.
type Workers struct {
	// Bootstrap is where the machines' bootstrap data comes from.
	Bootstrap clusterv1.Bootstrap
	// MachineTemplateKind is the kind of the provider's machine template (in Flotilla's
	// infrastructure API group) named GroupName.
	MachineTemplateKind string
}

// MachineDeployment builds the MachineDeployment of a worker node group, named GroupName. It
// sets explicitly every field CAPI's MachineDeployment webhook would default, because Flotilla
// may run CAPI's reconcilers without CAPI's webhooks: the cluster-name label, the selector and
// matching template labels, and a RollingUpdate strategy with maxSurge 1 and maxUnavailable 0,
// so a version change replaces machines one at a time without losing capacity. The group's
// labels go on the MachineDeployment and its machines, under Flotilla's and CAPI's, which they
// never replace. version is the full Kubernetes version the group's machines run. CAPI makes
// the CAPI Cluster its owner.
func MachineDeployment(c *flotillav1.Cluster, group flotillav1.WorkerNodeGroup, version string, w Workers) *clusterv1.MachineDeployment {
	name := GroupName(c.Name, group.Name)
	selector := map[string]string{
		clusterv1.ClusterNameLabel:           c.Name,
		clusterv1.MachineDeploymentNameLabel: name,
	}
	labels := maps.Clone(group.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	templateLabels := maps.Clone(labels)
	maps.Copy(labels, OwnedLabels(c))
	labels[flotillav1.WorkerNodeGroupLabel] = group.Name
	maps.Copy(templateLabels, selector)
	templateLabels[flotillav1.ClusterNameLabel] = c.Name
	templateLabels[flotillav1.WorkerNodeGroupLabel] = group.Name

	return &clusterv1.MachineDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachineDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: labels},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: c.Name,
			Replicas:    ptr.To(group.Count),
			Selector:    metav1.LabelSelector{MatchLabels: selector},
			Rollout: clusterv1.MachineDeploymentRolloutSpec{
				Strategy: clusterv1.MachineDeploymentRolloutStrategy{
					Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
					RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{
						MaxSurge:       ptr.To(intstr.FromInt32(1)),
						MaxUnavailable: ptr.To(intstr.FromInt32(0)),
					},
				},
			},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: templateLabels},
				Spec: clusterv1.MachineSpec{
					ClusterName: c.Name,
					Version:     version,
					Bootstrap:   w.Bootstrap,
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: infrav1.GroupVersion.Group,
						Kind:     w.MachineTemplateKind,
						Name:     name,
					},
				},
			},
		},
	}
}

// ControllerRef makes the Flotilla Cluster c the controller owner of an object.
func ControllerRef(c *flotillav1.Cluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         flotillav1.GroupVersion.String(),
		Kind:               "Cluster",
		Name:               c.Name,
		UID:                c.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// Cluster builds what the CAPI Cluster of a Flotilla Cluster has whatever its provider: the same
// name and namespace, Flotilla's cluster-name label (and the management label on a management
// cluster), and the cluster network. The provider completes it with what it points at: an
// infrastructure cluster and a control plane, or a topology.
func Cluster(c *flotillav1.Cluster) *clusterv1.Cluster {
	labels := map[string]string{flotillav1.ClusterNameLabel: c.Name}
	if c.Spec.Management {
		labels[flotillav1.ManagementLabel] = "true"
	}
	capi := &clusterv1.Cluster{
		TypeMeta:   metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: clusterv1.ClusterKind},
		ObjectMeta: metav1.ObjectMeta{Name: c.Name, Namespace: c.Namespace, Labels: labels},
	}
	if pods := c.Spec.ClusterNetwork.Pods; len(pods) > 0 {
		capi.Spec.ClusterNetwork.Pods.CIDRBlocks = append([]string(nil), pods...)
	}
	if services := c.Spec.ClusterNetwork.Services; len(services) > 0 {
		capi.Spec.ClusterNetwork.Services.CIDRBlocks = append([]string(nil), services...)
	}
	return capi
}
