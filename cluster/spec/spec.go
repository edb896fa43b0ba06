package spec

import (
	"fmt"
	"os"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// Defaults applied to what a spec file leaves out.
const (
	// DefaultNamespace is the namespace of documents that name none.
	DefaultNamespace = "default"
	// DefaultControlPlaneCount is spec.controlPlane.count when it is not set.
	DefaultControlPlaneCount = 1
	// DefaultPodCIDR is spec.clusterNetwork.pods when it is not set.
	DefaultPodCIDR = flotillav1.DefaultPodCIDR
	// DefaultServiceCIDR is spec.clusterNetwork.services when it is not set.
	DefaultServiceCIDR = flotillav1.DefaultServiceCIDR
)

// Spec is a validated, defaulted cluster spec file.
type Spec struct {
	// File is the name the spec was loaded from, as errors name it.
	File string

	// Provider is the infrastructure provider of the cluster, such as ProviderLocal.
	Provider string

	// Cluster is the Flotilla Cluster. Its spec.managementCluster.name is set for a management
	// cluster (to its own name) and left as the file has it for a workload cluster: the command
	// that creates it in a management cluster knows that cluster's name.
	Cluster *flotillav1.Cluster

	// KubernetesVersion is the full Kubernetes version spec.kubernetesVersion resolves to, such
	// as "v1.36.3" for "1.36" (see pkg/binaries).
	KubernetesVersion string

	// Datacenter is the datacenter config spec.datacenterRef names, such as a
	// *infrav1.LocalDatacenterConfig; nil for a cluster of a ClusterClass.
	Datacenter ctrlclient.Object

	// MachineConfigs are the provider's machine configs in the file by name, such as
	// *infrav1.LocalMachineConfig.
	MachineConfigs map[string]ctrlclient.Object

	// Objects are every object of the file in the order to apply them: the datacenter config,
	// the machine configs in file order, then the Cluster, which references them; for a cluster
	// of a ClusterClass, the templates (*unstructured.Unstructured) and the ClusterClass the file
	// holds, then the Cluster. Each has its apiVersion and kind set.
	Objects []ctrlclient.Object

	// GitOpsConfig is the GitOpsConfig that spec.gitOpsRef names, when the file holds it, with
	// its apiVersion and kind set; nil otherwise. It is not in Objects: it belongs to the
	// management cluster, never to a bootstrap cluster, and is applied there on its own.
	GitOpsConfig *flotillav1.GitOpsConfig
}

// Load reads, decodes, defaults and validates the cluster spec file at path. A file that is not
// valid returns an *Error listing every problem.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading cluster spec: %w", err)
	}
	return Parse(path, data)
}

// Parse decodes, defaults and validates a cluster spec; file names it in errors. The spec is
// multi-document YAML holding exactly one Cluster (cluster.flotilla.dev/v1alpha1) and its
// provider's datacenter and machine configs. Decoding is strict: unknown fields, duplicate keys
// and values of the wrong type are errors. A spec that is not valid returns an *Error listing
// every problem.
func Parse(file string, data []byte) (*Spec, error) {
	p := &problems{file: file}
	docs := decodeDocuments(data, p)
	if err := p.err(); err != nil {
		return nil, err
	}
	s := assemble(file, docs, p)
	if err := p.err(); err != nil {
		sortProblems(p.list)
		return nil, err
	}
	return s, nil
}
