package cluster

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	controlplanev1 "github.com/flotilla-dev/flotilla/api/controlplane/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	clustervalidation "github.com/flotilla-dev/flotilla/cluster/validation"
	"github.com/flotilla-dev/flotilla/infrastructure/capiobjects"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// The builders below turn a Flotilla Cluster (and the provider configs it names) into the objects
// the reconciler applies. They are pure: no client, no clock, the same input gives the same
// object. Every object carries the labels the reconciler and CAPI find it by, and the only fields
// it sets are the ones Flotilla owns (server-side apply removes a field Flotilla stops setting).

// BootstrapSecretName is the name of the empty bootstrap data Secret every worker machine of a
// cluster uses: <cluster>-bootstrap.
func BootstrapSecretName(clusterName string) string {
	return clusterName + "-bootstrap"
}

// controllerRef makes the Flotilla Cluster the controller owner of an object.
func controllerRef(c *flotillav1.Cluster) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         flotillav1.GroupVersion.String(),
		Kind:               "Cluster",
		Name:               c.Name,
		UID:                c.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// desiredCAPIClusterBase builds what the CAPI Cluster of every provider has: the same name and
// namespace, the Flotilla Cluster as its owner, the cluster network. The provider completes it
// with what it points at (provider.completeCAPICluster). paused sets spec.paused; when false the
// field is left out, so Flotilla neither sets nor clears a pause someone else (clusterctl move)
// set.
func desiredCAPIClusterBase(c *flotillav1.Cluster, paused bool) *clusterv1.Cluster {
	labels := map[string]string{flotillav1.ClusterNameLabel: c.Name}
	if c.Spec.Management {
		labels[flotillav1.ManagementLabel] = "true"
	}
	capi := &clusterv1.Cluster{
		TypeMeta: metav1.TypeMeta{APIVersion: clusterv1.GroupVersion.String(), Kind: clusterv1.ClusterKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:            c.Name,
			Namespace:       c.Namespace,
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{controllerRef(c)},
		},
	}
	if pods := c.Spec.ClusterNetwork.Pods; len(pods) > 0 {
		capi.Spec.ClusterNetwork.Pods.CIDRBlocks = append([]string(nil), pods...)
	}
	if services := c.Spec.ClusterNetwork.Services; len(services) > 0 {
		capi.Spec.ClusterNetwork.Services.CIDRBlocks = append([]string(nil), services...)
	}
	if paused {
		capi.Spec.Paused = ptr.To(true)
	}
	return capi
}

// desiredLocalCluster builds the LocalCluster, the CAPI infrastructure cluster of the local
// provider. It has no spec to speak of: the hosted control plane provides the endpoint. CAPI makes
// the CAPI Cluster its owner.
func desiredLocalCluster(c *flotillav1.Cluster) *infrav1.LocalCluster {
	return &infrav1.LocalCluster{
		TypeMeta: metav1.TypeMeta{APIVersion: infrav1.GroupVersion.String(), Kind: "LocalCluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      c.Name,
			Namespace: c.Namespace,
			Labels:    capiobjects.OwnedLabels(c),
		},
	}
}

// desiredControlPlane builds the LocalControlPlane: the full Kubernetes version (such as
// v1.36.3), which processes run (from the datacenter config), the endpoint when the spec fixes
// one, the Service range, and for a cluster with real nodes what they need (the node network and
// image mirror of the datacenter config, the Pod range). CAPI makes the CAPI Cluster its owner.
func desiredControlPlane(c *flotillav1.Cluster, version string, dc *infrav1.LocalDatacenterConfig) *controlplanev1.LocalControlPlane {
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
	if clustervalidation.HasRealNodes(c) {
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

// desiredBootstrapSecret builds the bootstrap data Secret every worker machine names in
// spec.bootstrap.dataSecretName. Local machines are Nodes kwok simulates: they need no bootstrap
// data, so the Secret is empty, but it exists so the CAPI contract holds. The Flotilla Cluster
// owns it, so clusterctl move carries it along and it goes away with the cluster.
func desiredBootstrapSecret(c *flotillav1.Cluster) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            BootstrapSecretName(c.Name),
			Namespace:       c.Namespace,
			Labels:          capiobjects.OwnedLabels(c),
			OwnerReferences: []metav1.OwnerReference{controllerRef(c)},
		},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{"value": {}},
	}
}

// desiredMachineTemplate builds the LocalMachineTemplate of a worker node group: the kind of its
// Nodes, and the capacity of simulated ones, from the group's LocalMachineConfig over the
// provider's defaults. The
// Flotilla Cluster owns it (CAPI adds the CAPI Cluster as a second owner once a
// MachineDeployment uses it), so it is cleaned up and moved even before CAPI has seen it.
func desiredMachineTemplate(c *flotillav1.Cluster, group flotillav1.WorkerNodeGroup, mc *infrav1.LocalMachineConfig) *infrav1.LocalMachineTemplate {
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
			OwnerReferences: []metav1.OwnerReference{controllerRef(c)},
		},
		Spec: infrav1.LocalMachineTemplateSpec{
			Template: infrav1.LocalMachineTemplateResource{
				Spec: infrav1.LocalMachineSpec{Node: infrav1.NodeKind(group.NodesOf()), Capacity: capacity, NodeLabels: group.Labels},
			},
		},
	}
}

// desiredMachineDeployment builds the MachineDeployment of a worker node group
// (capiobjects.MachineDeployment): its machines use the cluster's empty bootstrap data Secret
// and the group's LocalMachineTemplate. version is the full Kubernetes version the group's
// machines run (see workerVersion).
func desiredMachineDeployment(c *flotillav1.Cluster, group flotillav1.WorkerNodeGroup, version string) *clusterv1.MachineDeployment {
	return capiobjects.MachineDeployment(c, group, version, capiobjects.Workers{
		Bootstrap:           clusterv1.Bootstrap{DataSecretName: ptr.To(BootstrapSecretName(c.Name))},
		MachineTemplateKind: "LocalMachineTemplate",
	})
}

// workerVersion decides the Kubernetes version of a worker node group: desired is the cluster's,
// or the one the group pins. Workers follow the control plane, never lead it: a group moves to
// the desired version only once the control plane runs that version or a newer one (its status
// reports it). Until then an existing group keeps the version it has, so an upgrade restarts the
// control plane first and then rolls the workers. A new group gets the desired version (its
// machines wait for the control plane anyway).
func workerVersion(desired string, cp *controlplanev1.LocalControlPlane, current *clusterv1.MachineDeployment) string {
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
