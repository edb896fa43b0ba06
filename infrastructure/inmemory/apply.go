package inmemory

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/jsonmergepatch"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// applyPatchContentType is the content type of a server-side apply request.
const applyPatchContentType = "application/apply-patch+yaml"

// maxApplyBody bounds the body of an apply request, as kube-apiserver bounds a request's.
const maxApplyBody = 3 << 20

// apply serves a server-side apply (a PATCH of type application/apply-patch+yaml), which the
// in-memory server refuses (415). It keeps the promise an applier relies on, without managed
// fields: the object ends up with every field the configuration sets, fields the same field
// manager applied before and has left out are removed, and fields others set are kept. It
// computes that with a three-way JSON merge (the configuration the field manager last applied,
// the new one, the live object), as `kubectl apply` did before server-side apply; lists are
// replaced whole. The last applied configurations are kept in this process, by object and field
// manager, for as long as the object exists: the in-memory store lives no longer. A missing
// object is created. dryRun=All computes the result and writes nothing.
func (x *extensions) apply(w http.ResponseWriter, r *http.Request, p resourcePath) {
	ctx := r.Context()
	if p.name == "" || p.subresource != "" {
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "server-side apply is served for objects only, not for collections or subresources")
		return
	}
	group, err := x.resolve(r.Host)
	if err != nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, err.Error())
		return
	}
	gvk, ok := x.kindOf(ctx, p)
	if !ok {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, fmt.Sprintf("the server could not find the requested resource %s", p.resource))
		return
	}
	applied, appliedJSON, err := readApplied(r, gvk, p)
	if err != nil {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	c := x.memory.GetResourceGroup(group).GetClient()
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(gvk)
	err = c.Get(ctx, ctrlclient.ObjectKey{Namespace: p.namespace, Name: p.name}, live)
	key := appliedKey(group, gvk, p.namespace, p.name, r.URL.Query().Get("fieldManager"))
	dryRun := r.URL.Query().Get("dryRun") == metav1.DryRunAll
	obj, code := applied, http.StatusCreated
	switch {
	case apierrors.IsNotFound(err):
		if !dryRun {
			err = c.Create(ctx, obj)
		} else {
			err = nil
		}
	case err != nil:
	default:
		obj, err = x.merge(key, appliedJSON, live)
		code = http.StatusOK
		if err == nil && !dryRun {
			err = c.Update(ctx, obj)
		}
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if !dryRun {
		x.mu.Lock()
		x.applied[key] = appliedJSON
		x.mu.Unlock()
		if isWorkloadResource(p) {
			if obj, err = x.makeAvailable(ctx, group, gvk, p); err != nil { // workloads.go
				writeError(w, err)
				return
			}
		}
	}
	writeJSON(w, code, obj)
}

// readApplied reads the configuration an apply request carries: YAML or JSON of an object of
// kind gvk named as the path says. It is returned as an object to create, and as JSON without
// what an applier does not own (resourceVersion, managedFields, status).
func readApplied(r *http.Request, gvk schema.GroupVersionKind, p resourcePath) (*unstructured.Unstructured, []byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxApplyBody+1))
	if err != nil {
		return nil, nil, fmt.Errorf("reading the request: %w", err)
	}
	if len(body) > maxApplyBody {
		return nil, nil, errors.New("the request is larger than 3 MiB")
	}
	data, err := yaml.YAMLToJSON(body)
	if err != nil {
		return nil, nil, fmt.Errorf("decoding the applied configuration: %w", err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(data); err != nil {
		return nil, nil, fmt.Errorf("decoding the applied configuration: %w", err)
	}
	switch {
	case obj.GroupVersionKind() != gvk:
		return nil, nil, fmt.Errorf("the applied configuration is a %s, the path names a %s", obj.GroupVersionKind(), gvk)
	case obj.GetName() != "" && obj.GetName() != p.name:
		return nil, nil, fmt.Errorf("metadata.name %q is not %q, the name the path names", obj.GetName(), p.name)
	case obj.GetNamespace() != "" && obj.GetNamespace() != p.namespace:
		return nil, nil, fmt.Errorf("metadata.namespace %q is not %q, the namespace the path names", obj.GetNamespace(), p.namespace)
	}
	obj.SetName(p.name)
	obj.SetNamespace(p.namespace)
	obj.SetResourceVersion("")
	obj.SetManagedFields(nil)
	unstructured.RemoveNestedField(obj.Object, "status")
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	appliedJSON, err := obj.MarshalJSON()
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the applied configuration: %w", err)
	}
	return obj, appliedJSON, nil
}

// merge computes what applying appliedJSON to live gives: a three-way merge with the
// configuration last applied by the same field manager (key).
func (x *extensions) merge(key string, appliedJSON []byte, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	x.mu.Lock()
	original := x.applied[key]
	x.mu.Unlock()
	if original == nil {
		original = []byte("{}") // nothing applied before: nothing to remove
	}
	liveJSON, err := live.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encoding the live object: %w", err)
	}
	patch, err := jsonmergepatch.CreateThreeWayJSONMergePatch(original, appliedJSON, liveJSON)
	if err != nil {
		return nil, fmt.Errorf("merging the applied configuration: %w", err)
	}
	merged, err := jsonpatch.MergePatch(liveJSON, patch)
	if err != nil {
		return nil, fmt.Errorf("merging the applied configuration: %w", err)
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(merged); err != nil {
		return nil, fmt.Errorf("decoding the merged object: %w", err)
	}
	obj.SetResourceVersion(live.GetResourceVersion())
	return obj, nil
}

// appliedKey names an object of a cluster and one of its field managers in extensions.applied.
func appliedKey(group string, gvk schema.GroupVersionKind, namespace, name, manager string) string {
	return objectKey(group, gvk, namespace, name) + manager
}

// objectKey is the prefix of the appliedKeys of an object.
func objectKey(group string, gvk schema.GroupVersionKind, namespace, name string) string {
	return strings.Join([]string{group, gvk.String(), namespace, name, ""}, "|")
}

// forgetApplied drops what was applied to an object that is deleted, or to every object of a
// cluster that goes (an empty gvk).
func (x *extensions) forgetApplied(prefix string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for key := range x.applied {
		if strings.HasPrefix(key, prefix) {
			delete(x.applied, key)
		}
	}
}

// writeError answers with err's API status, or an internal error.
func writeError(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		writeJSON(w, int(s.Code), &s)
		return
	}
	writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
}
