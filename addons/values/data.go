package values

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// ForCluster gathers a template's Data for cluster: its own content and that of the objects its
// controlPlaneRef and infrastructureRef name, read in the version the API server prefers. An
// object that is referenced but cannot be read is an error naming it.
func ForCluster(ctx context.Context, c ctrlclient.Reader, mapper meta.RESTMapper, cluster *clusterv1.Cluster) (Data, error) {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cluster)
	if err != nil {
		return Data{}, fmt.Errorf("converting Cluster %s: %w", cluster.Name, err)
	}
	content["apiVersion"] = clusterv1.GroupVersion.String()
	content["kind"] = "Cluster"
	data := Data{Cluster: content}
	if data.ControlPlane, err = referenced(ctx, c, mapper, cluster.Namespace, cluster.Spec.ControlPlaneRef); err != nil {
		return Data{}, fmt.Errorf("reading the control plane of Cluster %s: %w", cluster.Name, err)
	}
	if data.InfraCluster, err = referenced(ctx, c, mapper, cluster.Namespace, cluster.Spec.InfrastructureRef); err != nil {
		return Data{}, fmt.Errorf("reading the infrastructure cluster of Cluster %s: %w", cluster.Name, err)
	}
	return data, nil
}

// referenced returns the content of the object ref names, an empty map when ref is unset.
func referenced(ctx context.Context, c ctrlclient.Reader, mapper meta.RESTMapper, namespace string, ref clusterv1.ContractVersionedObjectReference) (map[string]any, error) {
	if !ref.IsDefined() {
		return map[string]any{}, nil
	}
	mapping, err := mapper.RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if err != nil {
		return nil, fmt.Errorf("%s.%s %s: %w", ref.Kind, ref.APIGroup, ref.Name, err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: ref.Name}, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", ref.Kind, ref.Name, err)
	}
	return obj.Object, nil
}
