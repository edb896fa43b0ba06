package cluster

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
)

// apply server-side applies obj, a desired object from a builder, as FieldOwner, taking over
// fields another manager set (the desired objects hold only fields Flotilla owns). On success obj
// holds the object as the API server returned it, status included. A failure records a Warning
// Event on the Flotilla Cluster c.
func (r *Reconciler) apply(ctx context.Context, c *flotillav1.Cluster, obj ctrlclient.Object) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	u, err := applyConfiguration(obj)
	if err == nil {
		err = r.Client.Apply(ctx, ctrlclient.ApplyConfigurationFromUnstructured(u), ctrlclient.FieldOwner(FieldOwner), ctrlclient.ForceOwnership)
	}
	if err == nil {
		err = runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj)
	}
	if err != nil {
		if !apierrors.IsConflict(err) {
			r.Recorder.Eventf(c, obj, corev1.EventTypeWarning, eventApplyFailed, "Apply", "Applying %s %s: %v", kind, obj.GetName(), err)
		}
		return fmt.Errorf("applying %s %s: %w", kind, klog.KObj(obj), err)
	}
	return nil
}

// applyConfiguration turns a typed object into the body of an apply request. It goes through
// JSON so the types' omitempty/omitzero tags decide what is left out, and drops what an apply
// must not carry: status (a subresource) and the zero creationTimestamp.
func applyConfiguration(obj ctrlclient.Object) (*unstructured.Unstructured, error) {
	if obj.GetObjectKind().GroupVersionKind().Kind == "" {
		return nil, fmt.Errorf("%T %s has no apiVersion/kind set", obj, klog.KObj(obj))
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(raw, &u.Object); err != nil {
		return nil, fmt.Errorf("decoding %T: %w", obj, err)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}
