package cluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/capiobjects"
	packetspec "github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
)

// The Packet provider's RBAC: a Cluster whose datacenterRef is a PacketDatacenterConfig becomes
// a PacketCluster, a KubeadmControlPlane with its PacketMachineTemplate, and per worker node group
// a PacketMachineTemplate, a KubeadmConfigTemplate and a MachineDeployment. Cluster API's kubeadm
// providers and the Packet reconcilers take it from there. Deletion is the common path: deleting
// the CAPI Cluster deletes the rest.

// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetdatacenterconfigs;packetmachineconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetclusters;packetmachinetemplates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kubeadmcontrolplanes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=kubeadmconfigtemplates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines,verbs=get;list;watch

// packetProvider is the Packet provider's part of the reconciler (the Packet engineer's): a
// Cluster whose datacenterRef is a PacketDatacenterConfig becomes the objects
// infrastructure/packet/clusterspec builds. Its status is packet_status.go's.
type packetProvider struct {
	r *Reconciler

	// in holds the Packet configs the spec names; nil until resolve found them all.
	in *packetInputs
	// observed holds the cluster's Cluster API objects (packet_status.go).
	observed packetObserved
}

// packetInputs are the Packet configs a Cluster names.
type packetInputs struct {
	datacenter   *infrav1.PacketDatacenterConfig
	controlPlane *infrav1.PacketMachineConfig
	workers      map[string]*infrav1.PacketMachineConfig
}

// observe reads the Cluster API objects a Packet cluster's status comes from (packet_status.go).
func (p *packetProvider) observe(ctx context.Context, s *scope) error {
	c := s.cluster
	key := ctrlclient.ObjectKeyFromObject(c)
	pc := &infrav1.PacketCluster{}
	if found, err := p.r.get(ctx, key, pc); err != nil {
		return err
	} else if found {
		p.observed.packetCluster = pc
	}
	kcp := &kubeadmcontrolplanev1.KubeadmControlPlane{}
	if found, err := p.r.get(ctx, key, kcp); err != nil {
		return err
	} else if found {
		p.observed.kcp = kcp
		s.controlPlaneVersion = kcp.Spec.Version
	}
	machines := &clusterv1.MachineList{}
	if err := p.r.Client.List(ctx, machines, ctrlclient.InNamespace(c.Namespace), ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: c.Name}); err != nil {
		return fmt.Errorf("listing Machines of Cluster %s: %w", klog.KObj(c), err)
	}
	p.observed.machines = machines.Items
	return nil
}

// clusterOfPacketMachine maps a Machine of the Packet provider (its infrastructure is a
// PacketMachine) to the Flotilla Cluster of the same name as its CAPI Cluster. Machines of other
// providers map to nothing: the local provider's status does not read Machines.
func clusterOfPacketMachine(_ context.Context, obj ctrlclient.Object) []reconcile.Request {
	m, ok := obj.(*clusterv1.Machine)
	if !ok || m.Spec.InfrastructureRef.Kind != packetspec.MachineKind || m.Spec.ClusterName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ctrlclient.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}}}
}

// resolve reads the PacketDatacenterConfig and PacketMachineConfigs the spec names; what is
// missing or of the wrong kind is appended to errs.
func (p *packetProvider) resolve(ctx context.Context, s *scope, errs *field.ErrorList) error {
	c := s.cluster
	spec := field.NewPath("spec")
	in := &packetInputs{datacenter: &infrav1.PacketDatacenterConfig{}, workers: map[string]*infrav1.PacketMachineConfig{}}
	before := len(*errs)
	if err := p.r.getRef(ctx, c, spec.Child("datacenterRef"), c.Spec.DatacenterRef, in.datacenter, errs); err != nil {
		return err
	}
	machineConfig := func(path *field.Path, ref flotillav1.Ref) (*infrav1.PacketMachineConfig, error) {
		if ref.Kind != packetspec.MachineConfigKind {
			*errs = append(*errs, field.NotSupported(path.Child("kind"), ref.Kind, []string{packetspec.MachineConfigKind}))
			return nil, nil
		}
		mc := &infrav1.PacketMachineConfig{}
		return mc, p.r.getRef(ctx, c, path, ref, mc, errs)
	}
	if ref := c.Spec.ControlPlane.MachineGroupRef; ref != nil {
		mc, err := machineConfig(spec.Child("controlPlane", "machineGroupRef"), *ref)
		if err != nil {
			return err
		}
		in.controlPlane = mc
	} else {
		*errs = append(*errs, field.Required(spec.Child("controlPlane", "machineGroupRef"), "a Packet cluster names the PacketMachineConfig of its control plane devices"))
	}
	for i, group := range c.Spec.WorkerNodeGroups {
		mc, err := machineConfig(spec.Child("workerNodeGroups").Index(i).Child("machineGroupRef"), group.MachineGroupRef)
		if err != nil {
			return err
		}
		in.workers[group.Name] = mc
	}
	if len(*errs) == before {
		p.in = in
	}
	return nil
}

// completeCAPICluster points the CAPI Cluster at the PacketCluster and the KubeadmControlPlane.
func (p *packetProvider) completeCAPICluster(s *scope, capi *clusterv1.Cluster) {
	capi.Spec.InfrastructureRef = packetspec.InfrastructureRef(s.cluster.Name)
	capi.Spec.ControlPlaneRef = packetspec.ControlPlaneRef(s.cluster.Name)
}

// desired: the PacketCluster, the control plane's PacketMachineTemplate and the
// KubeadmControlPlane, then per worker node group its PacketMachineTemplate,
// KubeadmConfigTemplate and MachineDeployment. The templates are owned by the Flotilla Cluster,
// as the local provider's are.
//
// The PacketCluster and the KubeadmControlPlane are created with the owner reference to the CAPI
// Cluster that Cluster API's Cluster controller would add (capiOwnerRef), as its topology
// controller creates them: both wait for that reference before doing anything, and the Cluster
// controller adds it only in its third reconcile of a new Cluster (after its finalizer and its
// Paused condition, each a reconcile of its own, at most one a second per object). Owned from
// the start, the PacketCluster reserves the elastic IP and the KubeadmControlPlane takes its own
// first steps meanwhile, and the first control plane Machine is created about 2.5 s earlier.
//
// A group's MachineDeployment is created only once the KubeadmControlPlane reports the version
// of its machines (status.versions, written once it has created the first one). Before that,
// Cluster API's MachineSet counts the control plane as provisioning: its ControlPlaneIsStable
// preflight check puts the scale up on hold and looks again only 15 s later, so whether the
// workers' Machines came at once or 15 s later depended on which of the two controllers got
// there first (in one run they came 15 s later, when the control plane was nearly initialized).
// Created after, the workers' Machines, KubeadmConfigs and PacketMachines take their first steps
// while the control plane device provisions, and wait only for the control plane's kubeadm init.
// The KubeadmControlPlane watch brings the reconcile that creates it.
func (p *packetProvider) desired(s *scope) ([]ctrlclient.Object, error) {
	c := s.cluster
	all, err := packetspec.Objects(packetspec.Input{
		Cluster: c, Version: s.version,
		Datacenter: p.in.datacenter, ControlPlaneMachine: p.in.controlPlane, WorkerMachines: p.in.workers,
	})
	if err != nil {
		return nil, err
	}
	controlPlaneReportsVersion := kcpVersion(p.observed.kcp) != ""
	var objs []ctrlclient.Object
	for _, obj := range all[1:] { // the CAPI Cluster is reconcileCAPICluster's
		switch o := obj.(type) {
		case *infrav1.PacketCluster, *kubeadmcontrolplanev1.KubeadmControlPlane:
			if ref, ok := capiOwnerRef(s.capiCluster); ok {
				obj.SetOwnerReferences([]metav1.OwnerReference{ref})
			}
		case *clusterv1.MachineDeployment:
			group := workerNodeGroupOf(o)
			if s.machineDeployments[group] == nil && !controlPlaneReportsVersion {
				continue
			}
			// A group's kubernetesVersion is not applied: the KubeadmConfigTemplate installs the
			// cluster's version on every device.
			o.Spec.Template.Spec.Version = s.version
		default:
			obj.SetOwnerReferences([]metav1.OwnerReference{capiobjects.ControllerRef(c)})
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// capiOwnerRef is the owner reference Cluster API's Cluster controller puts on the objects its
// Cluster's infrastructureRef and controlPlaneRef name when the Cluster has no topology: not a
// controller reference, so that it is the same reference and the Cluster controller has nothing
// to change (util.HasExactOwnerRef). ok is false until the CAPI Cluster exists.
func capiOwnerRef(capi *clusterv1.Cluster) (ref metav1.OwnerReference, ok bool) {
	if capi == nil || capi.UID == "" {
		return metav1.OwnerReference{}, false
	}
	return metav1.OwnerReference{
		APIVersion: clusterv1.GroupVersion.String(),
		Kind:       clusterv1.ClusterKind,
		Name:       capi.Name,
		UID:        capi.UID,
	}, true
}

// obsolete: the MachineDeployments of removed worker node groups. Their templates stay until
// the cluster is deleted.
func (p *packetProvider) obsolete(s *scope) []ctrlclient.Object {
	return obsoleteMachineDeployments(s)
}
