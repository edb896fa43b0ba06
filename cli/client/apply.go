package client

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldOwner is the server-side apply field manager of everything the CLI applies.
const fieldOwner = ctrlclient.FieldOwner("flotilla-cli")

// applyObjects server-side applies objs in order, so re-running a command converges instead of
// failing on objects that already exist.
func applyObjects(ctx context.Context, c ctrlclient.Client, objs []ctrlclient.Object) error {
	for _, obj := range objs {
		u, err := toUnstructured(c, obj)
		if err != nil {
			return err
		}
		if err := c.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), fieldOwner, ctrlclient.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	return nil
}

// toUnstructured converts a typed object, setting its apiVersion and kind from the scheme.
func toUnstructured(c ctrlclient.Client, obj ctrlclient.Object) (*unstructured.Unstructured, error) {
	gvk, err := c.GroupVersionKindFor(obj)
	if err != nil {
		return nil, fmt.Errorf("finding the kind of %T: %w", obj, err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	u.SetManagedFields(nil)
	u.SetResourceVersion("")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
