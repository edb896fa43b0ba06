package inmemory

import (
	"context"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// The in-memory clusters run no Pods: nothing would ever make a Deployment available, and every
// Helm wait and Flotilla health gate would time out. So a workload written through the gateway
// gets, right after, the status of one whose every replica is updated, ready and available, as
// the local provider's kwok Nodes run their Pods: a Deployment counts spec.replicas (1 when unset)
// replicas, a DaemonSet one per Node without a NoSchedule taint. (The in-memory server serves no
// StatefulSets.) A workload someone else writes keeps its status until the next write through the
// gateway.

// workloadResources are the resources of apps/v1 whose status the gateway writes.
var workloadResources = map[string]bool{"deployments": true, "daemonsets": true}

// isWorkloadResource: p names a workload object (not its status or scale).
func isWorkloadResource(p resourcePath) bool {
	return p.gv == appsV1 && workloadResources[p.resource] && p.subresource == ""
}

var appsV1 = schema.GroupVersion{Group: "apps", Version: "v1"}

// serveWorkloadWrite hands a create, update or patch of a workload to the in-memory server,
// then makes the workload available.
func (x *extensions) serveWorkloadWrite(w http.ResponseWriter, r *http.Request, p resourcePath) {
	rec := &statusRecorder{ResponseWriter: w}
	x.next.ServeHTTP(rec, r)
	if rec.code >= 300 {
		return
	}
	group, err := x.resolve(r.Host)
	if err != nil {
		return
	}
	gvk, ok := x.kindOf(r.Context(), p)
	if !ok {
		return
	}
	if p.name == "" { // a create: the name is in the object the server answered with
		p.name = rec.createdName()
	}
	_, _ = x.makeAvailable(r.Context(), group, gvk, p)
}

// makeAvailable writes the status of an available workload on the workload p names, and returns
// the workload as stored.
func (x *extensions) makeAvailable(ctx context.Context, group string, gvk schema.GroupVersionKind, p resourcePath) (*unstructured.Unstructured, error) {
	c := x.memory.GetResourceGroup(group).GetClient()
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: p.namespace, Name: p.name}, obj); err != nil {
		return nil, err
	}
	nodes, err := x.nodes(ctx, group)
	if err != nil {
		return nil, err
	}
	status := availableStatus(obj, schedulable(nodes))
	current, _, _ := unstructured.NestedMap(obj.Object, "status")
	// The in-memory store counts every change as a new generation, this one included.
	status["observedGeneration"] = obj.GetGeneration() + 1
	if equality.Semantic.DeepEqual(withoutObserved(current), withoutObserved(status)) {
		return obj, nil
	}
	if err := unstructured.SetNestedMap(obj.Object, status, "status"); err != nil {
		return nil, fmt.Errorf("setting the status of %s %s: %w", gvk.Kind, p.name, err)
	}
	if err := c.Update(ctx, obj); err != nil && !apierrors.IsConflict(err) {
		return nil, err
	}
	return obj, nil
}

func withoutObserved(status map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range status {
		if k != "observedGeneration" {
			out[k] = v
		}
	}
	return out
}

// schedulable counts the Nodes a DaemonSet runs a Pod on: those without a NoSchedule taint.
func schedulable(nodes []corev1.Node) int64 {
	var n int64
	for _, node := range nodes {
		tainted := false
		for _, t := range node.Spec.Taints {
			tainted = tainted || t.Effect == corev1.TaintEffectNoSchedule
		}
		if !tainted {
			n++
		}
	}
	return n
}

// availableStatus is the status of obj with every replica running (nodes Nodes for a
// DaemonSet), in the fields Helm's readiness checks and Flotilla's health gate read.
func availableStatus(obj *unstructured.Unstructured, nodes int64) map[string]any {
	replicas, found, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
	if !found {
		replicas = 1
	}
	switch obj.GetKind() {
	case "DaemonSet":
		return map[string]any{
			"desiredNumberScheduled": nodes, "currentNumberScheduled": nodes, "updatedNumberScheduled": nodes,
			"numberReady": nodes, "numberAvailable": nodes, "numberMisscheduled": int64(0),
		}
	default: // Deployment
		return map[string]any{
			"replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
			"conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "simulated by the in-memory provider"},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": "simulated by the in-memory provider"},
			},
		}
	}
}

// statusRecorder passes a response through and remembers its status code and (up to
// maxApplyBody) its body.
type statusRecorder struct {
	http.ResponseWriter
	code int
	body []byte
}

// createdName is the name of the object the response holds; "" when it holds none.
func (s *statusRecorder) createdName() string {
	obj := &unstructured.Unstructured{}
	if obj.UnmarshalJSON(s.body) != nil {
		return ""
	}
	return obj.GetName()
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	if len(s.body) < maxApplyBody {
		s.body = append(s.body, p...)
	}
	return s.ResponseWriter.Write(p)
}

// Flush passes a flush through.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
