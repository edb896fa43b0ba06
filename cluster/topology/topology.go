package topology

import (
	"maps"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// Of builds the topology of the Cluster API Cluster of c, a Cluster with spec.topology; version
// is the full Kubernetes version spec.kubernetesVersion resolves to. It is pure.
func Of(c *flotillav1.Cluster, version string) clusterv1.Topology {
	t := clusterv1.Topology{
		ClassRef:     clusterv1.ClusterClassRef{Name: c.Spec.Topology.Class},
		Version:      version,
		ControlPlane: clusterv1.ControlPlaneTopology{Replicas: ptr.To(c.Spec.ControlPlane.Count)},
	}
	for _, v := range c.Spec.Topology.Variables {
		t.Variables = append(t.Variables, clusterv1.ClusterVariable{
			Name:  v.Name,
			Value: apiextensionsv1.JSON{Raw: append([]byte(nil), v.Value.Raw...)},
		})
	}
	for _, g := range c.Spec.WorkerNodeGroups {
		labels := maps.Clone(g.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[flotillav1.ClusterNameLabel] = c.Name
		labels[flotillav1.WorkerNodeGroupLabel] = g.Name
		t.Workers.MachineDeployments = append(t.Workers.MachineDeployments, clusterv1.MachineDeploymentTopology{
			Metadata: clusterv1.ObjectMeta{Labels: labels},
			Class:    g.Class,
			Name:     g.Name,
			Replicas: ptr.To(g.Count),
		})
	}
	return t
}

// pathMap maps the fields of a Cluster API Cluster's topology to those of the Flotilla Cluster
// they come from, longest prefix first.
var pathMap = []struct{ capi, flotilla string }{
	{"spec.topology.workers.machineDeployments", "spec.workerNodeGroups"},
	{"spec.topology.controlPlane.replicas", "spec.controlPlane.count"},
	{"spec.topology.classRef.name", "spec.topology.class"},
	{"spec.topology.classRef", "spec.topology.class"},
	{"spec.topology.version", "spec.kubernetesVersion"},
}

// FlotillaPath names the field of a Flotilla Cluster behind capiPath, a field of its Cluster API
// Cluster's topology (as Cluster API's validation names it): spec.topology.version is
// spec.kubernetesVersion, spec.topology.workers.machineDeployments[0].class is
// spec.workerNodeGroups[0].class. spec.topology.variables keeps its name, and so does a path
// that has no Flotilla counterpart.
func FlotillaPath(capiPath string) string {
	for _, m := range pathMap {
		if rest, ok := strings.CutPrefix(capiPath, m.capi); ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			return m.flotilla + rest
		}
	}
	return capiPath
}

// FlotillaErrors renames the fields of Cluster API's validation errors with FlotillaPath.
func FlotillaErrors(errs field.ErrorList) field.ErrorList {
	out := make(field.ErrorList, 0, len(errs))
	for _, err := range errs {
		e := *err
		e.Field = FlotillaPath(e.Field)
		out = append(out, &e)
	}
	return out
}
