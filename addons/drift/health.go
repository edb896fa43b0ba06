package drift

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// IsWorkload reports whether objects of kind gvk are workloads whose availability Unavailable
// looks at: Deployments, StatefulSets and DaemonSets.
func IsWorkload(gvk schema.GroupVersionKind) bool {
	return gvk.Group == "apps" && (gvk.Kind == "Deployment" || gvk.Kind == "StatefulSet" || gvk.Kind == "DaemonSet")
}

// Unavailable returns the workloads among objects (Deployments, StatefulSets, DaemonSets) that
// are not available in the cluster, each as "Kind namespace/name (why)"; none when all are.
func (c *Checker) Unavailable(ctx context.Context, cfg *rest.Config, objects []*unstructured.Unstructured) ([]string, error) {
	cl, err := c.client(cfg)
	if err != nil {
		return nil, err
	}
	var unavailable []string
	for _, want := range objects {
		gvk := want.GroupVersionKind()
		if !IsWorkload(gvk) {
			continue
		}
		live := &unstructured.Unstructured{}
		live.SetGroupVersionKind(gvk)
		key := ctrlclient.ObjectKeyFromObject(want)
		if err := cl.Get(ctx, key, live); err != nil {
			if apierrors.IsNotFound(err) {
				unavailable = append(unavailable, fmt.Sprintf("%s %s (missing)", gvk.Kind, key))
				continue
			}
			return nil, fmt.Errorf("reading %s %s: %w", gvk.Kind, key, err)
		}
		if why := notAvailable(live); why != "" {
			unavailable = append(unavailable, fmt.Sprintf("%s %s (%s)", gvk.Kind, key, why))
		}
	}
	return unavailable, nil
}

// notAvailable says why a workload is not available, "" when it is: its controller has seen
// the current spec and every replica is updated and available (ready for StatefulSets).
func notAvailable(obj *unstructured.Unstructured) string {
	status := func(f string) int64 {
		v, _, _ := unstructured.NestedInt64(obj.Object, "status", f)
		return v
	}
	if observed := status("observedGeneration"); observed < obj.GetGeneration() {
		return "its controller has not seen the current spec"
	}
	switch obj.GetKind() {
	case "DaemonSet":
		desired := status("desiredNumberScheduled")
		if status("updatedNumberScheduled") < desired || status("numberAvailable") < desired {
			return fmt.Sprintf("%d of %d available", status("numberAvailable"), desired)
		}
	default:
		replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		if !found {
			replicas = 1
		}
		ready := status("availableReplicas")
		if obj.GetKind() == "StatefulSet" {
			ready = status("readyReplicas")
		}
		if status("updatedReplicas") < replicas || ready < replicas {
			return fmt.Sprintf("%d of %d available", ready, replicas)
		}
	}
	return ""
}
