package inmemory

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Metadata-only requests. client-go's metadata client, and so controller-runtime's metadata
// informers (the drift watches of Flotilla's addons), ask for objects "as PartialObjectMetadata"
// in their Accept header. The in-memory server answers every request with whole objects, which
// such a client cannot decode (a watch of it ends at once with an ERROR event). The gateway turns
// the answer into what kube-apiserver sends: a PartialObjectMetadata (meta.k8s.io/v1) for an
// object, a PartialObjectMetadataList for a list, and watch events whose objects are
// PartialObjectMetadata, streamed as the in-memory server streams them.

// metadataOnly: the request asks for metadata only.
func metadataOnly(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata")
}

// serveMetadata answers a metadata-only get, list or watch.
func (x *extensions) serveMetadata(w http.ResponseWriter, r *http.Request, _ resourcePath) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept", "application/json")
	if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" {
		x.serveMetadataWatch(w, r)
		return
	}
	rec := httptest.NewRecorder()
	x.next.ServeHTTP(rec, r)
	if rec.Code != http.StatusOK {
		copyResponse(w, rec)
		return
	}
	var content map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &content); err != nil {
		copyResponse(w, rec)
		return
	}
	u := &unstructured.Unstructured{Object: content}
	if !u.IsList() {
		writeJSON(w, http.StatusOK, partialObjectMetadata(u))
		return
	}
	list, err := u.ToList()
	if err != nil {
		copyResponse(w, rec)
		return
	}
	out := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: list.GetResourceVersion(), Continue: list.GetContinue()},
		Items:    make([]metav1.PartialObjectMetadata, 0, len(list.Items)),
	}
	for i := range list.Items {
		out.Items = append(out.Items, *partialObjectMetadata(&list.Items[i]))
	}
	writeJSON(w, http.StatusOK, out)
}

// partialObjectMetadata is the metadata of u, as kube-apiserver sends it.
func partialObjectMetadata(u *unstructured.Unstructured) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadata"}}
	if raw, ok := u.Object["metadata"].(map[string]any); ok {
		data, err := json.Marshal(raw)
		if err == nil {
			_ = json.Unmarshal(data, &m.ObjectMeta)
		}
	}
	return m
}

// serveMetadataWatch streams the in-memory server's watch of r, each event's object turned into
// its metadata.
func (x *extensions) serveMetadataWatch(w http.ResponseWriter, r *http.Request) {
	pr, pw := io.Pipe()
	tw := &transformingWriter{ResponseWriter: w, pipe: pw}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = pr.Close() }()
		flusher, _ := w.(http.Flusher)
		dec := json.NewDecoder(pr)
		enc := json.NewEncoder(w)
		for {
			var ev struct {
				Type   string         `json:"type"`
				Object map[string]any `json:"object"`
			}
			if err := dec.Decode(&ev); err != nil {
				_, _ = io.Copy(io.Discard, pr) // let the server's writes end
				return
			}
			var object any = ev.Object
			if ev.Type != "ERROR" {
				object = partialObjectMetadata(&unstructured.Unstructured{Object: ev.Object})
			}
			if err := enc.Encode(map[string]any{"type": ev.Type, "object": object}); err != nil {
				_, _ = io.Copy(io.Discard, pr)
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}()
	x.next.ServeHTTP(tw, r)
	_ = pw.Close()
	<-done
}

// transformingWriter hands what the in-memory server writes to a pipe, keeping its headers and
// status for the response itself.
type transformingWriter struct {
	http.ResponseWriter
	pipe *io.PipeWriter
}

func (t *transformingWriter) Write(p []byte) (int, error) { return t.pipe.Write(p) }

// Flush does nothing: the transformation flushes each event it writes.
func (t *transformingWriter) Flush() {}

// copyResponse passes a recorded response on as it is.
func copyResponse(w http.ResponseWriter, rec *httptest.ResponseRecorder) {
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(rec.Body.Bytes())
}
