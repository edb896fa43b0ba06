// Package drift finds and restores objects of a Helm release that were changed or deleted in
// the workload cluster behind Helm's back.
//
// Compare decides whether a live object still is what the manifest declares: every field the
// manifest sets must have the same value in the live object (mappings are compared key by key,
// lists element by element and must have the same length), while fields the manifest does not
// set are free: defaults the API server adds, status, and fields other controllers own. Ignore
// rules (kind, optional name, JSON pointers) exclude fields, or whole objects, other controllers
// are known to own, such as an autoscaler's /spec/replicas.
//
// A Checker reads the live objects through a client built from the cluster's *rest.Config
// (cached per cluster), and restores a drifted object by server-side applying its manifest
// (without the ignored fields) under Helm's own field manager, forcing ownership back, with the
// labels and annotations Helm marks its objects with, so the next helm upgrade owns the object as
// before. A deleted object is created again the same way.
package drift
