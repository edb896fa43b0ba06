package drift

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestNotAvailable(t *testing.T) {
	workload := func(kind string, generation int64, spec, status map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": kind, "spec": spec, "status": status}}
		u.SetGeneration(generation)
		return u
	}
	tests := []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"a Deployment with every replica updated and available is available",
			workload("Deployment", 2, map[string]any{"replicas": int64(2)}, map[string]any{"observedGeneration": int64(2), "updatedReplicas": int64(2), "availableReplicas": int64(2)}), ""},
		{"a Deployment its controller has not seen yet is not",
			workload("Deployment", 3, map[string]any{"replicas": int64(2)}, map[string]any{"observedGeneration": int64(2), "updatedReplicas": int64(2), "availableReplicas": int64(2)}), "its controller has not seen the current spec"},
		{"a Deployment without replicas wants one",
			workload("Deployment", 1, map[string]any{}, map[string]any{"observedGeneration": int64(1)}), "0 of 1 available"},
		{"a StatefulSet counts ready replicas",
			workload("StatefulSet", 1, map[string]any{"replicas": int64(3)}, map[string]any{"observedGeneration": int64(1), "updatedReplicas": int64(3), "readyReplicas": int64(2)}), "2 of 3 available"},
		{"a DaemonSet available on every scheduled node is available",
			workload("DaemonSet", 1, map[string]any{}, map[string]any{"observedGeneration": int64(1), "desiredNumberScheduled": int64(4), "updatedNumberScheduled": int64(4), "numberAvailable": int64(4)}), ""},
		{"a DaemonSet missing on a node is not",
			workload("DaemonSet", 1, map[string]any{}, map[string]any{"observedGeneration": int64(1), "desiredNumberScheduled": int64(4), "updatedNumberScheduled": int64(4), "numberAvailable": int64(3)}), "3 of 4 available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(notAvailable(tt.obj)).To(Equal(tt.want))
		})
	}
}
