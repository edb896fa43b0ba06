package inmemory

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReplicaSets. The in-memory server serves Deployments but not ReplicaSets, and Helm's readiness
// check of a Deployment (cli-utils' kstatus status reader) lists the Deployment's ReplicaSets:
// without them it reports the Deployment's status as Unknown, and every Helm wait fails. The
// in-memory clusters run no controllers, so a Deployment has no ReplicaSet: the gateway lists
// the resource in apps/v1's discovery, as read-only, and answers every list with none.

var replicaSetResource = metav1.APIResource{
	Name: "replicasets", SingularName: "replicaset", Namespaced: true, Kind: "ReplicaSet",
	Verbs: metav1.Verbs{"get", "list", "watch"}, ShortNames: []string{"rs"},
}

// serveAppsDiscovery answers the discovery of apps/v1: the in-memory server's, with
// ReplicaSets.
func (x *extensions) serveAppsDiscovery(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	x.next.ServeHTTP(rec, r)
	var list metav1.APIResourceList
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &list) != nil {
		copyResponse(w, rec)
		return
	}
	list.APIResources = append(list.APIResources, replicaSetResource)
	writeJSON(w, http.StatusOK, &list)
}

// serveReplicaSets answers a request for ReplicaSets: an empty list, a watch on which nothing
// happens, NotFound for one, MethodNotAllowed for a write.
func serveReplicaSets(w http.ResponseWriter, r *http.Request, p resourcePath) {
	switch {
	case r.Method != http.MethodGet:
		writeStatus(w, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed, "the in-memory cluster's ReplicaSets are read-only: it runs no controller that would make them")
	case p.name != "":
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, `replicasets.apps "`+p.name+`" not found`)
	case r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		timeout := 5 * time.Minute
		if s, err := strconv.Atoi(r.URL.Query().Get("timeoutSeconds")); err == nil && s > 0 {
			timeout = time.Duration(s) * time.Second
		}
		select {
		case <-r.Context().Done():
		case <-time.After(timeout):
		}
	default:
		writeJSON(w, http.StatusOK, map[string]any{
			"apiVersion": "apps/v1", "kind": "ReplicaSetList", "metadata": map[string]any{"resourceVersion": "0"}, "items": []any{},
		})
	}
}
