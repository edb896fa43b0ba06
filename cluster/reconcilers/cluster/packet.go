package cluster

import (
	"cmp"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/clusterspec"
)

// The Packet provider's branch of the reconciler (the Packet engineer's): a Cluster whose
// datacenterRef is a PacketDatacenterConfig becomes the objects infrastructure/packet/clusterspec
// builds — a PacketCluster, a KubeadmControlPlane with its PacketMachineTemplate, and per worker
// node group a PacketMachineTemplate, a KubeadmConfigTemplate and a MachineDeployment. Cluster
// API's kubeadm providers and the Packet reconcilers take it from there. Deletion is the common
// path: deleting the CAPI Cluster deletes the rest.

// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetdatacenterconfigs;packetmachineconfigs,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.flotilla.dev,resources=packetclusters;packetmachinetemplates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=controlplane.cluster.x-k8s.io,resources=kubeadmcontrolplanes,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=bootstrap.cluster.x-k8s.io,resources=kubeadmconfigtemplates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines,verbs=get;list;watch

// observePacket reads the Cluster API objects a Packet cluster's status comes from
// (packet_status.go) into s.packetObserved.
func (r *Reconciler) observePacket(ctx context.Context, s *scope) error {
	c := s.cluster
	key := ctrlclient.ObjectKeyFromObject(c)
	o := &packetObserved{}
	pc := &infrav1.PacketCluster{}
	if found, err := r.get(ctx, key, pc); err != nil {
		return err
	} else if found {
		o.packetCluster = pc
	}
	kcp := &kubeadmcontrolplanev1.KubeadmControlPlane{}
	if found, err := r.get(ctx, key, kcp); err != nil {
		return err
	} else if found {
		o.kcp = kcp
	}
	machines := &clusterv1.MachineList{}
	if err := r.Client.List(ctx, machines, ctrlclient.InNamespace(c.Namespace), ctrlclient.MatchingLabels{clusterv1.ClusterNameLabel: c.Name}); err != nil {
		return fmt.Errorf("listing Machines of Cluster %s: %w", klog.KObj(c), err)
	}
	o.machines = machines.Items
	s.packetObserved = o
	return nil
}

// clusterOfPacketMachine maps a Machine of the Packet provider (its infrastructure is a
// PacketMachine) to the Flotilla Cluster of the same name as its CAPI Cluster. Machines of other
// providers map to nothing: the local provider's status does not read Machines.
func clusterOfPacketMachine(_ context.Context, obj ctrlclient.Object) []reconcile.Request {
	m, ok := obj.(*clusterv1.Machine)
	if !ok || m.Spec.InfrastructureRef.Kind != clusterspec.MachineKind || m.Spec.ClusterName == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: ctrlclient.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}}}
}

// packetInputs are the Packet configs a Cluster names.
type packetInputs struct {
	datacenter   *infrav1.PacketDatacenterConfig
	controlPlane *infrav1.PacketMachineConfig
	workers      map[string]*infrav1.PacketMachineConfig
}

// isPacket reports whether the Cluster is a Packet cluster.
func isPacket(c *flotillav1.Cluster) bool {
	return c.Spec.DatacenterRef.Kind == clusterspec.DatacenterConfigKind
}

// resolvePacketInputs reads the PacketDatacenterConfig and PacketMachineConfigs the spec names
// into s.packet; what is missing or of the wrong kind is appended to errs.
func (r *Reconciler) resolvePacketInputs(ctx context.Context, s *scope, errs *field.ErrorList) error {
	c := s.cluster
	spec := field.NewPath("spec")
	in := &packetInputs{datacenter: &infrav1.PacketDatacenterConfig{}, workers: map[string]*infrav1.PacketMachineConfig{}}
	before := len(*errs)
	if err := r.getRef(ctx, c, spec.Child("datacenterRef"), c.Spec.DatacenterRef, in.datacenter, errs); err != nil {
		return err
	}
	machineConfig := func(path *field.Path, ref flotillav1.Ref) (*infrav1.PacketMachineConfig, error) {
		if ref.Kind != clusterspec.MachineConfigKind {
			*errs = append(*errs, field.NotSupported(path.Child("kind"), ref.Kind, []string{clusterspec.MachineConfigKind}))
			return nil, nil
		}
		mc := &infrav1.PacketMachineConfig{}
		return mc, r.getRef(ctx, c, path, ref, mc, errs)
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
		s.packet = in
	}
	return nil
}

// packetObjects builds the Packet cluster's objects other than the CAPI Cluster.
func packetObjects(s *scope) ([]ctrlclient.Object, error) {
	objs, err := clusterspec.Objects(clusterspec.Input{
		Cluster: s.cluster, Version: s.version,
		Datacenter: s.packet.datacenter, ControlPlaneMachine: s.packet.controlPlane, WorkerMachines: s.packet.workers,
	})
	if err != nil {
		return nil, err
	}
	return objs[1:], nil // the CAPI Cluster is reconcileCAPICluster's
}

// reconcilePacketControlPlane applies the PacketCluster, the control plane's
// PacketMachineTemplate and the KubeadmControlPlane.
//
// The PacketCluster and the KubeadmControlPlane are created with the owner reference to the CAPI
// Cluster that Cluster API's Cluster controller would add (capiOwnerRef), as its topology
// controller creates them: both wait for that reference before doing anything, and the Cluster
// controller adds it only in its third reconcile of a new Cluster (after its finalizer and its
// Paused condition, each a reconcile of its own, at most one a second per object). Owned from
// the start, the PacketCluster reserves the elastic IP and the KubeadmControlPlane takes its own
// first steps meanwhile, and the first control plane Machine is created about 2.5 s earlier.
func (r *Reconciler) reconcilePacketControlPlane(ctx context.Context, s *scope) error {
	objs, err := packetObjects(s)
	if err != nil {
		return err
	}
	for _, obj := range objs[:3] {
		switch obj.(type) {
		case *infrav1.PacketMachineTemplate:
			obj.SetOwnerReferences([]metav1.OwnerReference{controllerRef(s.cluster)})
		case *infrav1.PacketCluster, *kubeadmcontrolplanev1.KubeadmControlPlane:
			if ref, ok := capiOwnerRef(s.capiCluster); ok {
				obj.SetOwnerReferences([]metav1.OwnerReference{ref})
			}
		}
		if err := r.apply(ctx, s.cluster, obj); err != nil {
			return err
		}
	}
	return nil
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

// reconcilePacketWorkers applies every worker node group's templates and MachineDeployment.
// The templates are owned by the Flotilla Cluster, as the local provider's are.
//
// A group's MachineDeployment is created only once the KubeadmControlPlane reports the version
// of its machines (status.versions, written once it has created the first one). Before that,
// Cluster API's MachineSet counts the control plane as provisioning: its ControlPlaneIsStable
// preflight check puts the scale up on hold and looks again only 15 s later, so whether the
// workers' Machines came at once or 15 s later depended on which of the two controllers got
// there first (in one run they came 15 s later, when the control plane was nearly initialized).
// Created after, the workers' Machines, KubeadmConfigs and PacketMachines take their first steps
// while the control plane device provisions, and wait only for the control plane's kubeadm init.
func (r *Reconciler) reconcilePacketWorkers(ctx context.Context, s *scope) error {
	c := s.cluster
	objs, err := packetObjects(s)
	if err != nil {
		return err
	}
	controlPlaneReportsVersion := s.packetObserved != nil && kcpVersion(s.packetObserved.kcp) != ""
	for _, obj := range objs[3:] {
		md, isMD := obj.(*clusterv1.MachineDeployment)
		if !isMD {
			obj.SetOwnerReferences([]metav1.OwnerReference{controllerRef(c)})
		}
		if isMD {
			group := md.Labels[flotillav1.WorkerNodeGroupLabel]
			if s.machineDeployments[group] == nil && !controlPlaneReportsVersion {
				continue // the KubeadmControlPlane watch brings the reconcile that creates it
			}
			md.Spec.Template.Spec.Version = cmp.Or(s.groupVersions[group], s.version)
			if s.machineDeployments[group] == nil {
				r.Recorder.Eventf(c, md, corev1.EventTypeNormal, eventCreated, "Create", "Created MachineDeployment %s with %d workers", md.Name, ptrValue(md.Spec.Replicas))
			}
		}
		if err := r.apply(ctx, c, obj); err != nil {
			return err
		}
		if isMD {
			s.machineDeployments[md.Labels[flotillav1.WorkerNodeGroupLabel]] = md
		}
	}
	return nil
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
