package topology

import (
	"fmt"
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
//
// Every MachineDeployment skips the MachineSet's ControlPlaneIsStable preflight check. Cluster
// API's topology controller creates the workers with the control plane, and the check puts
// their scale up on hold while the control plane is provisioning and looks again only 15 s
// later, so a new cluster's workers came up to 15 s after its control plane; they wait for its
// initialization anyway (their bootstrap data needs it). Upgrades stay ordered: the topology
// controller moves the workers to a new version only once the control plane runs it.
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
			Metadata: clusterv1.ObjectMeta{Labels: labels, Annotations: map[string]string{
				clusterv1.MachineSetSkipPreflightChecksAnnotation: string(clusterv1.MachineSetPreflightCheckControlPlaneIsStable),
			}},
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

// ClassNotFound is the error of a Cluster whose spec.topology.class (at path) names no
// ClusterClass of its namespace.
func ClassNotFound(path *field.Path, c *flotillav1.Cluster) *field.Error {
	return &field.Error{
		Type:     field.ErrorTypeNotFound,
		Field:    path.String(),
		BadValue: c.Spec.Topology.Class,
		Detail: fmt.Sprintf("no ClusterClass of that name in namespace %q; name one an admin provides there (kubectl get clusterclasses -n %s)",
			c.Namespace, c.Namespace),
	}
}
