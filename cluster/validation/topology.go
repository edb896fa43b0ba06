package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// A Cluster of a Cluster API ClusterClass (spec.topology) takes its infrastructure from the
// class. The rules here are those of its shape; whether its topology fits the class (the class
// exists, its variables pass their schemas) needs the class, which the webhook reads
// (cluster/webhooks).

// validateShape checks the fields of a Cluster whose meaning a ClusterClass changes: a Cluster
// of a ClusterClass leaves out what the class provides (the datacenter and machine configs, the
// control plane endpoint), names a worker class for every group, lets every group follow the
// cluster's version, and is a workload cluster; a Cluster of a Flotilla provider names no worker
// class.
func validateShape(c *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	groups := spec.Child("workerNodeGroups")
	if c.Spec.Topology == nil {
		for i, g := range c.Spec.WorkerNodeGroups {
			if g.Class != "" {
				errs = append(errs, field.Forbidden(groups.Index(i).Child("class"), "names a worker class of a ClusterClass: set spec.topology, or name a machine config in machineGroupRef instead"))
			}
		}
		return errs
	}
	if c.Spec.DatacenterRef != (flotillav1.Ref{}) {
		errs = append(errs, field.Forbidden(spec.Child("datacenterRef"), "a cluster of a ClusterClass (spec.topology) takes its infrastructure from the class: remove datacenterRef"))
	}
	if c.Spec.ControlPlane.MachineGroupRef != nil {
		errs = append(errs, field.Forbidden(spec.Child("controlPlane", "machineGroupRef"), "a cluster of a ClusterClass takes its control plane machines from the class: remove it"))
	}
	if c.Spec.ControlPlane.Endpoint != nil {
		errs = append(errs, field.Forbidden(spec.Child("controlPlane", "endpoint"), "the provider of a ClusterClass chooses the endpoint: remove it"))
	}
	if c.Spec.Management {
		errs = append(errs, field.Forbidden(spec.Child("management"), "a management cluster runs on the local provider: a cluster of a ClusterClass is a workload cluster"))
	}
	for i, g := range c.Spec.WorkerNodeGroups {
		path := groups.Index(i)
		if g.Class == "" {
			errs = append(errs, field.Required(path.Child("class"), "name the ClusterClass's worker class (a MachineDeployment class) the group's machines are made from"))
		}
		if g.MachineGroupRef != (flotillav1.Ref{}) {
			errs = append(errs, field.Forbidden(path.Child("machineGroupRef"), "a group of a ClusterClass cluster names a worker class in class instead: remove it"))
		}
		if g.KubernetesVersion != "" {
			errs = append(errs, field.Forbidden(path.Child("kubernetesVersion"), "the workers of a ClusterClass cluster follow spec.kubernetesVersion: remove it"))
		}
	}
	return errs
}

// validateTopologyImmutable: a cluster keeps its ClusterClass, and cannot gain or lose one.
func validateTopologyImmutable(oldC, newC *flotillav1.Cluster) field.ErrorList {
	switch {
	case (oldC.Spec.Topology == nil) != (newC.Spec.Topology == nil):
		return field.ErrorList{field.Forbidden(spec.Child("topology"), "is immutable: a cluster cannot move between a Flotilla provider and a ClusterClass")}
	case oldC.Spec.Topology != nil && oldC.Spec.Topology.Class != newC.Spec.Topology.Class:
		return field.ErrorList{field.Forbidden(spec.Child("topology", "class"), "is immutable: a cluster keeps the ClusterClass it was created from")}
	}
	return nil
}
