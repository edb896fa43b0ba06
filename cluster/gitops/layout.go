package gitops

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"

	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Layout of a repository. Paths are slash-separated and relative to the repository's root.
const (
	// ClustersDir holds one directory per management cluster.
	ClustersDir = "clusters"
	// WorkloadClustersDir, inside a management cluster's directory, holds one directory per
	// workload cluster.
	WorkloadClustersDir = "workload-clusters"
	// SpecFileName is the cluster spec file in a cluster's directory.
	SpecFileName = "cluster.yaml"
)

// ManagementDir is the directory of management cluster management: clusters/<management>.
func ManagementDir(management string) string {
	return path.Join(ClustersDir, management)
}

// ClusterDir is the directory of cluster name managed by management: the management cluster's
// own directory when name is management, else
// clusters/<management>/workload-clusters/<name>.
func ClusterDir(management, name string) string {
	if name == management {
		return ManagementDir(management)
	}
	return path.Join(ManagementDir(management), WorkloadClustersDir, name)
}

// SpecPath is the spec file of cluster name managed by management.
func SpecPath(management, name string) string {
	return path.Join(ClusterDir(management, name), SpecFileName)
}

// RenderSpec renders objs as the multi-document YAML of a cluster spec file, in order, after a
// comment header. Only what a spec file holds is kept: apiVersion, kind, metadata (name,
// namespace, labels, annotations) and spec. Each object must have its apiVersion and kind set.
// The output depends on nothing but objs, so rendering the same spec twice gives the same bytes.
func RenderSpec(header string, objs []ctrlclient.Object) ([]byte, error) {
	var out bytes.Buffer
	for _, line := range bytes.Split([]byte(header), []byte("\n")) {
		out.WriteString("# ")
		out.Write(line)
		out.WriteString("\n")
	}
	for _, obj := range objs {
		doc, err := specDocument(obj)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(doc)
	}
	return out.Bytes(), nil
}

// specDocument renders one object of a spec file. It goes through JSON so the types'
// omitempty/omitzero tags decide what is left out; sigs.k8s.io/yaml sorts the keys.
func specDocument(obj ctrlclient.Object) ([]byte, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" {
		return nil, fmt.Errorf("rendering %T %s: it has no apiVersion/kind set", obj, klog.KObj(obj))
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", gvk.Kind, klog.KObj(obj), err)
	}
	var full map[string]any
	if err := json.Unmarshal(raw, &full); err != nil {
		return nil, fmt.Errorf("decoding %s %s: %w", gvk.Kind, klog.KObj(obj), err)
	}
	meta := map[string]any{"name": obj.GetName()}
	if ns := obj.GetNamespace(); ns != "" {
		meta["namespace"] = ns
	}
	if labels := obj.GetLabels(); len(labels) > 0 {
		meta["labels"] = labels
	}
	if annotations := obj.GetAnnotations(); len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	doc := map[string]any{
		"apiVersion": gvk.GroupVersion().String(),
		"kind":       gvk.Kind,
		"metadata":   meta,
	}
	if spec, ok := full["spec"]; ok {
		doc["spec"] = spec
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("rendering %s %s: %w", gvk.Kind, klog.KObj(obj), err)
	}
	return data, nil
}
