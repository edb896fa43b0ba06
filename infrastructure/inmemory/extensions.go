package inmemory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	inmemoryruntime "sigs.k8s.io/cluster-api/test/infrastructure/inmemory/pkg/runtime"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// Cluster API's in-memory API server serves what Cluster API's controllers ask of a workload
// cluster. Helm, Flotilla's package and addon controllers and kubectl ask for more; the gateway
// serves that in front of it (extensions.handler) and hands everything else to it:
//
//   - /version (Helm and client-go's discovery read it first), and /healthz, /livez, /readyz;
//   - server-side apply (apply.go), which Helm 4 installs and upgrades every object with;
//   - metadata-only lists, gets and watches (metadata.go), which Flotilla's drift watches and
//     controller-runtime's metadata informers ask for;
//   - workloads that become available (workloads.go): there are no Pods, so a Deployment,
//     StatefulSet or DaemonSet written through the gateway gets the status of one whose replicas
//     all run, as kwok gives the local provider's, and Helm's waits and Flotilla's health gates
//     mean something.
//
// docs/providers.md lists what was missing and what is still not served.

// newExtensions wraps the in-memory API server's handler next with what it lacks (handler).
// resolve finds a request's cluster (its resource group in memory) by the address it came in
// on.
func newExtensions(memory inmemoryruntime.Manager, resolve func(hostPort string) (string, error), next http.Handler) *extensions {
	return &extensions{memory: memory, resolve: resolve, next: next, kinds: map[schema.GroupVersion]map[string]string{}, applied: map[string][]byte{}}
}

// handler serves the extensions, and the in-memory server's handler behind them.
func (x *extensions) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /version", x.version)
	for _, path := range []string{"/healthz", "/livez", "/readyz"} {
		mux.HandleFunc("GET "+path, ok)
	}
	mux.HandleFunc("GET /apis/apps/v1", x.serveAppsDiscovery) // replicasets.go
	mux.HandleFunc("/api/", x.serveResource)
	mux.HandleFunc("/apis/", x.serveResource)
	mux.Handle("/", x.next)
	return mux
}

// extensions holds what the extensions share.
type extensions struct {
	memory  inmemoryruntime.Manager
	resolve func(hostPort string) (string, error)
	next    http.Handler

	mu sync.Mutex
	// kinds maps the resources of each group version the in-memory server serves to their
	// kinds, as its discovery says.
	kinds map[schema.GroupVersion]map[string]string
	// applied holds, by appliedKey, the configuration each field manager last applied to an
	// object (apply.go).
	applied map[string][]byte
}

// serveResource routes a request for a resource: an apply, a metadata-only read, a write of a
// workload; everything else goes to the in-memory server.
func (x *extensions) serveResource(w http.ResponseWriter, r *http.Request) {
	p, isResource := parseResourcePath(r.URL.Path)
	switch {
	case !isResource:
		x.next.ServeHTTP(w, r)
	case p.gv == appsV1 && p.resource == replicaSetResource.Name:
		serveReplicaSets(w, r, p)
	case r.Method == http.MethodPatch && r.Header.Get("Content-Type") == applyPatchContentType:
		x.apply(w, r, p)
	case r.Method == http.MethodGet && metadataOnly(r):
		x.serveMetadata(w, r, p)
	case r.Method == http.MethodPut && p.name != "":
		x.serveUpdate(w, r, p)
	case (r.Method == http.MethodPost || r.Method == http.MethodPatch) && isWorkloadResource(p):
		x.serveWorkloadWrite(w, r, p)
	case r.Method == http.MethodDelete && p.name != "" && p.subresource == "":
		x.serveDelete(w, r, p)
	default:
		x.next.ServeHTTP(w, r)
	}
}

// serveUpdate hands an update to the in-memory server. An update without a resourceVersion is
// unconditional in kube-apiserver (Helm's release storage updates its Secrets so), and a
// conflict in the in-memory store: the gateway gives it the live object's. The body may be JSON
// or protobuf (client-go's typed clients send protobuf); it is passed on as JSON.
func (x *extensions) serveUpdate(w http.ResponseWriter, r *http.Request, p resourcePath) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxApplyBody+1))
	if err != nil || len(body) > maxApplyBody {
		writeStatus(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "reading the request: too large or unreadable")
		return
	}
	r = r.Clone(r.Context())
	if data, ok := x.withResourceVersion(r, p, body); ok {
		body = data
		r.Header.Set("Content-Type", "application/json")
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if isWorkloadResource(p) {
		x.serveWorkloadWrite(w, r, p)
		return
	}
	x.next.ServeHTTP(w, r)
}

// withResourceVersion returns the object of an update's body with the live object's
// resourceVersion, as JSON, when the body has none; ok is false when it has one or cannot be
// read (the in-memory server answers as it will).
func (x *extensions) withResourceVersion(r *http.Request, p resourcePath, body []byte) ([]byte, bool) {
	group, err := x.resolve(r.Host)
	if err != nil {
		return nil, false
	}
	decoded, _, err := serializer.NewCodecFactory(x.memory.GetScheme()).UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil, false
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(decoded)
	if err != nil {
		return nil, false
	}
	obj := &unstructured.Unstructured{Object: content}
	obj.SetGroupVersionKind(decoded.GetObjectKind().GroupVersionKind())
	if obj.GetResourceVersion() != "" {
		return nil, false
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if x.memory.GetResourceGroup(group).GetClient().Get(r.Context(), ctrlclient.ObjectKey{Namespace: p.namespace, Name: p.name}, live) != nil {
		return nil, false
	}
	obj.SetResourceVersion(live.GetResourceVersion())
	data, err := obj.MarshalJSON()
	return data, err == nil
}

// serveDelete hands a deletion to the in-memory server, answers a successful one with a Status,
// as kube-apiserver does (the in-memory server answers with no body, which clients that decode
// the answer, as Helm's and kubectl's resource helper, take for an error), and forgets what was
// applied to the object.
func (x *extensions) serveDelete(w http.ResponseWriter, r *http.Request, p resourcePath) {
	rec := httptest.NewRecorder()
	x.next.ServeHTTP(rec, r)
	if rec.Code >= 300 || rec.Body.Len() > 0 {
		copyResponse(w, rec)
		return
	}
	gvk, ok := x.kindOf(r.Context(), p)
	if group, err := x.resolve(r.Host); err == nil && ok {
		x.forgetApplied(objectKey(group, gvk, p.namespace, p.name))
	}
	writeJSON(w, http.StatusOK, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: p.name, Group: p.gv.Group, Kind: p.resource},
	})
}

// resourcePath is what the path of a request for a resource names.
type resourcePath struct {
	gv        schema.GroupVersion
	namespace string
	resource  string
	// name and subresource are empty for a collection.
	name, subresource string
}

// parseResourcePath parses /api/v1/[namespaces/NS/]RESOURCE[/NAME[/SUB]] and
// /apis/GROUP/VERSION/[namespaces/NS/]RESOURCE[/NAME[/SUB]]; ok is false for other paths
// (discovery, /api/v1 itself).
func parseResourcePath(path string) (p resourcePath, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		p.gv, parts = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		p.gv, parts = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return p, false
	}
	// namespaces/NS/RESOURCE...: a namespaced resource; namespaces[/NAME]: the Namespaces.
	if len(parts) >= 3 && parts[0] == "namespaces" {
		p.namespace, parts = parts[1], parts[2:]
	}
	p.resource = parts[0]
	if len(parts) > 1 {
		p.name = parts[1]
	}
	if len(parts) > 2 {
		p.subresource = strings.Join(parts[2:], "/")
	}
	return p, true
}

// kindOf is the kind of a resource of the in-memory server, from its discovery, asked once per
// group version; ok is false when it serves no such resource.
func (x *extensions) kindOf(ctx context.Context, p resourcePath) (schema.GroupVersionKind, bool) {
	x.mu.Lock()
	kinds, known := x.kinds[p.gv]
	x.mu.Unlock()
	if !known {
		kinds = x.discover(ctx, p.gv)
		x.mu.Lock()
		x.kinds[p.gv] = kinds
		x.mu.Unlock()
	}
	kind, ok := kinds[p.resource]
	return p.gv.WithKind(kind), ok
}

// discover asks the in-memory server for the resources of gv.
func (x *extensions) discover(ctx context.Context, gv schema.GroupVersion) map[string]string {
	path := "/apis/" + gv.String()
	if gv.Group == "" {
		path = "/api/" + gv.Version
	}
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	rec := httptest.NewRecorder()
	x.next.ServeHTTP(rec, req)
	kinds := map[string]string{}
	var list metav1.APIResourceList
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &list) != nil {
		return kinds
	}
	for _, r := range list.APIResources {
		kinds[r.Name] = r.Kind
	}
	return kinds
}

// ok answers a health probe: the in-memory server serves as long as the process runs.
func ok(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok"))
}

// version answers /version, which clients (Helm, kubectl, client-go's discovery) read first:
// the Kubernetes version of the cluster is the kubelet version its control plane Nodes report,
// the version Cluster API's Machines asked the in-memory backend for.
func (x *extensions) version(w http.ResponseWriter, r *http.Request) {
	group, err := x.resolve(r.Host)
	if err != nil {
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, err.Error())
		return
	}
	nodes, err := x.nodes(r.Context(), group)
	if err != nil {
		writeStatus(w, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		return
	}
	info, ok := versionInfo(nodes)
	if !ok {
		writeStatus(w, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, "the control plane has no Node yet")
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// nodes lists the Nodes of a cluster's resource group. The in-memory store holds objects as
// unstructured; they are converted.
func (x *extensions) nodes(ctx context.Context, group string) ([]corev1.Node, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := x.memory.GetResourceGroup(group).GetClient().List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	nodes := make([]corev1.Node, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &nodes[i]); err != nil {
			return nil, fmt.Errorf("reading Node %s: %w", list.Items[i].GetName(), err)
		}
	}
	return nodes, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeStatus answers with a metav1.Status, as kube-apiserver does.
func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, message string) {
	writeJSON(w, code, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: message, Reason: reason, Code: int32(code), //nolint:gosec // an HTTP status code
	})
}
