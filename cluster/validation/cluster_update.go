package validation

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	localspec "github.com/flotilla-dev/flotilla/infrastructure/local/clusterspec"
	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

// ValidateClusterUpdate checks a change of a Cluster, both defaulted by DefaultCluster.
// Immutable fields may not change; the create rules apply again only to the fields (and worker
// node groups) that changed, so a Cluster created under older rules can still be updated, and
// its finalizer removed.
func ValidateClusterUpdate(oldC, newC *flotillav1.Cluster) field.ErrorList {
	errs := validateImmutable(oldC, newC)
	errs = append(errs, validateTopologyImmutable(oldC, newC)...)
	if newC.Spec.Topology != nil && !equality.Semantic.DeepEqual(oldC.Spec, newC.Spec) {
		errs = append(errs, validateShape(newC)...)
	}
	versionChanged := oldC.Spec.KubernetesVersion != newC.Spec.KubernetesVersion
	if versionChanged {
		errs = append(errs, validateVersion(spec.Child("kubernetesVersion"), newC.Spec.KubernetesVersion)...)
		errs = append(errs, validateVersionChange(oldC.Spec.KubernetesVersion, newC.Spec.KubernetesVersion)...)
	}
	oldCP, newCP := oldC.Spec.ControlPlane, newC.Spec.ControlPlane
	if oldCP.Count != newCP.Count {
		errs = append(errs, validateControlPlaneCount(newC)...)
	}
	if !ptr.Equal(oldCP.Endpoint, newCP.Endpoint) {
		errs = append(errs, validateEndpoint(newC)...)
	}
	if !ptr.Equal(oldCP.MachineGroupRef, newCP.MachineGroupRef) {
		errs = append(errs, validateControlPlaneRef(newC)...)
	}
	errs = append(errs, validateWorkerNodeGroups(newC, func(i int) bool {
		group := newC.Spec.WorkerNodeGroups[i]
		j := slices.IndexFunc(oldC.Spec.WorkerNodeGroups, func(g flotillav1.WorkerNodeGroup) bool { return g.Name == group.Name })
		return j < 0 || !sameGroup(oldC.Spec.WorkerNodeGroups[j], group)
	})...)
	if versionChanged || !slices.EqualFunc(oldC.Spec.WorkerNodeGroups, newC.Spec.WorkerNodeGroups, sameVersionPin) {
		errs = append(errs, validateWorkerVersions(newC)...)
		errs = append(errs, validateWorkerVersionChanges(oldC, newC)...)
	}
	errs = append(errs, validateNodesUnchanged(oldC, newC)...)
	if localspec.HasRealNodes(newC) && !localspec.HasRealNodes(oldC) {
		errs = append(errs, validateRealNodeNetwork(newC)...)
	}
	if oldC.Spec.ManagementCluster != newC.Spec.ManagementCluster {
		errs = append(errs, validateManagement(newC)...)
	}
	if !equality.Semantic.DeepEqual(oldC.Spec.Proxy, newC.Spec.Proxy) {
		errs = append(errs, validateProxy(newC)...)
	}
	return errs
}

// validateVersionChange: one minor version up at a time, never down.
func validateVersionChange(oldVersion, newVersion string) field.ErrorList {
	path := spec.Child("kubernetesVersion")
	before, errOld := kubeversion.Parse(oldVersion)
	after, errNew := kubeversion.Parse(newVersion)
	switch {
	case errOld != nil || errNew != nil:
		return nil // an unparsable version is reported by validateVersion
	case after.Major != before.Major || after.Minor < before.Minor:
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("cannot change from %s to %s: downgrades are not supported", oldVersion, newVersion))}
	case after.Minor > before.Minor+1:
		return field.ErrorList{field.Forbidden(path, fmt.Sprintf("cannot change from %s to %s: upgrade one minor version at a time (to %d.%d first)", oldVersion, newVersion, before.Major, before.Minor+1))}
	}
	return nil
}

// validateWorkerVersionChanges: a worker node group's version (the one it pins, else the
// cluster's) moves up, never down. Groups that follow the cluster before and after are left to
// validateVersionChange.
func validateWorkerVersionChanges(oldC, newC *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	for i, group := range newC.Spec.WorkerNodeGroups {
		j := slices.IndexFunc(oldC.Spec.WorkerNodeGroups, func(g flotillav1.WorkerNodeGroup) bool { return g.Name == group.Name })
		if j < 0 || (group.KubernetesVersion == "" && oldC.Spec.WorkerNodeGroups[j].KubernetesVersion == "") {
			continue // new, or following the cluster, whose own version change is checked
		}
		before := cmp.Or(oldC.Spec.WorkerNodeGroups[j].KubernetesVersion, oldC.Spec.KubernetesVersion)
		after := cmp.Or(group.KubernetesVersion, newC.Spec.KubernetesVersion)
		from, errFrom := kubeversion.Parse(before)
		to, errTo := kubeversion.Parse(after)
		if errFrom == nil && errTo == nil && to.Compare(from) < 0 {
			errs = append(errs, field.Forbidden(spec.Child("workerNodeGroups").Index(i).Child("kubernetesVersion"),
				fmt.Sprintf("group %q runs %s: cannot go down to %s, downgrades are not supported", group.Name, before, after)))
		}
	}
	return errs
}

// validateNodesUnchanged: a worker node group keeps the kind of its nodes; its machines are
// made of that kind, and a change would replace none of them.
func validateNodesUnchanged(oldC, newC *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	for i, group := range newC.Spec.WorkerNodeGroups {
		j := slices.IndexFunc(oldC.Spec.WorkerNodeGroups, func(g flotillav1.WorkerNodeGroup) bool { return g.Name == group.Name })
		if j >= 0 && oldC.Spec.WorkerNodeGroups[j].NodesOf() != group.NodesOf() {
			errs = append(errs, field.Forbidden(spec.Child("workerNodeGroups").Index(i).Child("nodes"), fmt.Sprintf(
				"is immutable: group %q has %s nodes; add a group with nodes: %s and scale this one to 0",
				group.Name, oldC.Spec.WorkerNodeGroups[j].NodesOf(), group.NodesOf())))
		}
	}
	return errs
}

// validateImmutable: management, datacenterRef, gitOpsRef, the control plane endpoint once set,
// and clusterNetwork (which may only go from unset to the defaults, for Clusters created before
// the defaulting webhook ran).
func validateImmutable(oldC, newC *flotillav1.Cluster) field.ErrorList {
	var errs field.ErrorList
	if oldC.Spec.Management != newC.Spec.Management {
		msg := "is immutable: a management cluster cannot become a workload cluster"
		if newC.Spec.Management {
			msg = "is immutable: a workload cluster cannot become a management cluster in place; create a new management cluster"
		}
		errs = append(errs, field.Forbidden(spec.Child("management"), msg))
	}
	if oldC.Spec.DatacenterRef != newC.Spec.DatacenterRef {
		errs = append(errs, field.Forbidden(spec.Child("datacenterRef"), "is immutable"))
	}
	if !ptr.Equal(oldC.Spec.GitOpsRef, newC.Spec.GitOpsRef) {
		errs = append(errs, field.Forbidden(spec.Child("gitOpsRef"), "is immutable: a cluster keeps the GitOpsConfig it was created with"))
	}
	if oldEP := oldC.Spec.ControlPlane.Endpoint; oldEP != nil {
		if newEP := newC.Spec.ControlPlane.Endpoint; newEP == nil || *newEP != *oldEP {
			errs = append(errs, field.Forbidden(spec.Child("controlPlane", "endpoint"), "is immutable once set"))
		}
	}
	network := spec.Child("clusterNetwork")
	if !rangesUnchanged(oldC.Spec.ClusterNetwork.Pods, newC.Spec.ClusterNetwork.Pods, flotillav1.DefaultPodCIDR) {
		errs = append(errs, field.Forbidden(network.Child("pods"), "is immutable"))
	}
	if !rangesUnchanged(oldC.Spec.ClusterNetwork.Services, newC.Spec.ClusterNetwork.Services, flotillav1.DefaultServiceCIDR) {
		errs = append(errs, field.Forbidden(network.Child("services"), "is immutable"))
	}
	return errs
}

// rangesUnchanged: equal, or unset before and defaulted now.
func rangesUnchanged(oldRanges, newRanges []string, def string) bool {
	return slices.Equal(oldRanges, newRanges) || (len(oldRanges) == 0 && slices.Equal(newRanges, []string{def}))
}

// sameGroup: the same group with the same spec apart from its count (scaling) and its version
// pin (which validateWorkerVersions checks).
func sameGroup(a, b flotillav1.WorkerNodeGroup) bool {
	a.Count, a.KubernetesVersion = b.Count, b.KubernetesVersion
	return equality.Semantic.DeepEqual(a, b)
}

// sameVersionPin compares the version two worker node groups pin.
func sameVersionPin(a, b flotillav1.WorkerNodeGroup) bool {
	return a.Name == b.Name && a.KubernetesVersion == b.KubernetesVersion
}
