package clusterspec

import (
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/capiobjects"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// Kinds of the local provider's configs, valid in a Flotilla Cluster's refs.
const (
	DatacenterConfigKind = flotillav1.LocalDatacenterConfigKind
	MachineConfigKind    = flotillav1.LocalMachineConfigKind
)

// Input is what the objects are built from: the Flotilla Cluster and the configs it names, and
// what the management cluster holds of it (for WorkerVersion).
type Input struct {
	// Cluster is the Flotilla Cluster.
	Cluster *flotillav1.Cluster
	// Version is the full Kubernetes version of the cluster, such as v1.36.3.
	Version string
	// GroupVersions are the full Kubernetes versions of the worker node groups that pin one, by
	// group name.
	GroupVersions map[string]string
	// Datacenter is the LocalDatacenterConfig spec.datacenterRef names; nil when absent.
	Datacenter *infrav1.LocalDatacenterConfig
	// MachineConfigs are the LocalMachineConfigs of the worker node groups, by group name.
	MachineConfigs map[string]*infrav1.LocalMachineConfig
	// ControlPlane is the cluster's LocalControlPlane; nil when it does not exist yet.
	ControlPlane *controlplanev1.LocalControlPlane
	// MachineDeployments are the cluster's MachineDeployments, by worker node group.
	MachineDeployments map[string]*clusterv1.MachineDeployment
}

// InfrastructureRef is the CAPI Cluster's spec.infrastructureRef: the LocalCluster.
func InfrastructureRef(cluster string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{APIGroup: infrav1.GroupVersion.Group, Kind: "LocalCluster", Name: cluster}
}

// ControlPlaneRef is the CAPI Cluster's spec.controlPlaneRef: the LocalControlPlane.
func ControlPlaneRef(cluster string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{APIGroup: controlplanev1.GroupVersion.Group, Kind: "LocalControlPlane", Name: cluster}
}

// Objects returns the objects to apply after the CAPI Cluster, in order: the bootstrap Secret,
// the LocalCluster and the LocalControlPlane, then per worker node group its
// LocalMachineTemplate and MachineDeployment, whose version follows the control plane
// (WorkerVersion).
func Objects(in Input) []ctrlclient.Object {
	c := in.Cluster
	objs := []ctrlclient.Object{BootstrapSecret(c), LocalCluster(c), ControlPlane(c, in.Version, in.Datacenter)}
	for _, group := range c.Spec.WorkerNodeGroups {
		version := cmp.Or(in.GroupVersions[group.Name], in.Version)
		objs = append(objs,
			MachineTemplate(c, group, in.MachineConfigs[group.Name]),
			MachineDeployment(c, group, WorkerVersion(version, in.ControlPlane, in.MachineDeployments[group.Name])))
	}
	return objs
}

// HasRealNodes reports whether a worker node group of c has real nodes (which the local
// provider alone runs).
func HasRealNodes(c *flotillav1.Cluster) bool {
	return slices.ContainsFunc(c.Spec.WorkerNodeGroups, func(g flotillav1.WorkerNodeGroup) bool {
		return g.NodesOf() == flotillav1.RealNodes
	})
}

// BootstrapSecretName is the name of the empty bootstrap data Secret every worker machine of a
// cluster uses: <cluster>-bootstrap.
func BootstrapSecretName(clusterName string) string {
	return clusterName + "-bootstrap"
}

// LocalCluster is the CAPI infrastructure cluster of the local provider. It has no spec to
// speak of: the hosted control plane provides the endpoint. CAPI makes the CAPI Cluster its
// owner.
func LocalCluster(c *flotillav1.Cluster) *infrav1.LocalCluster {
	return &infrav1.LocalCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: infrav1.GroupVersion.String(), Kind: "LocalCluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      c.Name,
			Namespace: c.Namespace,
			Labels:    capiobjects.OwnedLabels(c),
		},
	}
}

// ControlPlane is the LocalControlPlane: the full Kubernetes version (such as v1.36.3), which
// processes run (from the datacenter config), the endpoint when the spec fixes one, the Service
// range, and for a cluster with real nodes what they need (the node network and image mirror of
// the datacenter config, the Pod range). CAPI makes the CAPI Cluster its owner.
func ControlPlane(c *flotillav1.Cluster, version string, dc *infrav1.LocalDatacenterConfig) *controlplanev1.LocalControlPlane {
	lcp := &controlplanev1.LocalControlPlane{
		TypeMeta: metav1.TypeMeta{APIVersion: controlplanev1.GroupVersion.String(), Kind: "LocalControlPlane"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      c.Name,
			Namespace: c.Namespace,
			Labels:    capiobjects.OwnedLabels(c),
		},
		Spec: controlplanev1.LocalControlPlaneSpec{Version: version},
	}
	if dc != nil {
		lcp.Spec.ControllerManager = copyBool(dc.Spec.ControllerManager)
		lcp.Spec.Scheduler = copyBool(dc.Spec.Scheduler)
	}
	if ep := c.Spec.ControlPlane.Endpoint; ep != nil {
		lcp.Spec.ControlPlaneEndpoint = controlplanev1.APIEndpoint{Host: ep.Host, Port: ep.Port}
	}
	if services := c.Spec.ClusterNetwork.Services; len(services) > 0 {
		lcp.Spec.ServiceClusterIPRange = services[0]
	}
	if HasRealNodes(c) {
		lcp.Spec.RealNodes = &controlplanev1.RealNodesSpec{ImageMirror: infrav1.DefaultImageMirror, PodCIDR: flotillav1.DefaultPodCIDR}
		if pods := c.Spec.ClusterNetwork.Pods; len(pods) > 0 {
			lcp.Spec.RealNodes.PodCIDR = pods[0]
		}
		if dc != nil {
			lcp.Spec.RealNodes.Network = dc.Spec.NodeNetwork
			if dc.Spec.ImageMirror != "" {
				lcp.Spec.RealNodes.ImageMirror = dc.Spec.ImageMirror
			}
		}
	}
	return lcp
}

// BootstrapSecret is the bootstrap data Secret every worker machine names in
// spec.bootstrap.dataSecretName. Local machines are Nodes kwok simulates: they need no bootstrap
// data, so the Secret is empty, but it exists so the CAPI contract holds. The Flotilla Cluster owns it, so clusterctl move carries it
// along and it goes away with the cluster.
func BootstrapSecret(c *flotillav1.Cluster) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            BootstrapSecretName(c.Name),
			Namespace:       c.Namespace,
			Labels:          capiobjects.OwnedLabels(c),
			OwnerReferences: []metav1.OwnerReference{capiobjects.ControllerRef(c)},
		},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{"value": {}},
	}
}

// MachineTemplate is the LocalMachineTemplate of a worker node group: the kind of its Nodes,
// and the capacity of simulated ones, from the group's LocalMachineConfig over the provider's
// defaults. The Flotilla Cluster owns it (CAPI adds the CAPI Cluster as a second owner once a
// MachineDeployment uses it), so it is cleaned up and moved even before CAPI has seen it.
func MachineTemplate(c *flotillav1.Cluster, group flotillav1.WorkerNodeGroup, mc *infrav1.LocalMachineConfig) *infrav1.LocalMachineTemplate {
	capacity := infrav1.DefaultCapacity()
	if mc != nil {
		for name, quantity := range mc.Spec.Capacity {
			capacity[name] = quantity.DeepCopy()
		}
	}
	labels := capiobjects.OwnedLabels(c)
	labels[flotillav1.WorkerNodeGroupLabel] = group.Name
	return &infrav1.LocalMachineTemplate{
		TypeMeta: metav1.TypeMeta{APIVersion: infrav1.GroupVersion.String(), Kind: "LocalMachineTemplate"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            capiobjects.GroupName(c.Name, group.Name),
			Namespace:       c.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{capiobjects.ControllerRef(c)},
		},
		Spec: infrav1.LocalMachineTemplateSpec{
			Template: infrav1.LocalMachineTemplateResource{
				Spec: infrav1.LocalMachineSpec{Node: infrav1.NodeKind(group.NodesOf()), Capacity: capacity, NodeLabels: group.Labels},
			},
		},
	}
}

// MachineDeployment is the MachineDeployment of a worker node group
// (capiobjects.MachineDeployment): its machines use the cluster's empty bootstrap data Secret
// and the group's LocalMachineTemplate. version is the full Kubernetes version the group's
// machines run (see WorkerVersion).
func MachineDeployment(c *flotillav1.Cluster, group flotillav1.WorkerNodeGroup, version string) *clusterv1.MachineDeployment {
	return capiobjects.MachineDeployment(c, group, version, capiobjects.Workers{
		Bootstrap:           clusterv1.Bootstrap{DataSecretName: ptr.To(BootstrapSecretName(c.Name))},
		MachineTemplateKind: "LocalMachineTemplate",
	})
}

// WorkerVersion decides the Kubernetes version of a worker node group: desired is the cluster's,
// or the one the group pins. Workers follow the control plane, never lead it: a group moves to
// the desired version only once the control plane runs that version or a newer one (its status
// reports it). Until then an existing group keeps the version it has, so an upgrade restarts the
// control plane first and then rolls the workers. A new group gets the desired version (its
// machines wait for the control plane anyway).
func WorkerVersion(desired string, cp *controlplanev1.LocalControlPlane, current *clusterv1.MachineDeployment) string {
	if current == nil || current.Spec.Template.Spec.Version == "" {
		return desired
	}
	if cp != nil && kubeversion.AtLeast(cp.Status.Version, desired) {
		return desired
	}
	return current.Spec.Template.Spec.Version
}

func copyBool(b *bool) *bool {
	if b == nil {
		return nil
	}
	return ptr.To(*b)
}
