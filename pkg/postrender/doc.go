// Package postrender changes the manifests Helm rendered before they are installed: kustomize
// patches (strategic merge and JSON 6902), image overrides and labels, applied by kustomize's
// own library (sigs.k8s.io/kustomize/api), never by a patch engine of ours.
//
// A Spec is what a HelmChartProxy or a Package asks for. Spec.Run is a Helm post-renderer: the
// Helm engine (pkg/helm) runs it on every install, upgrade and diff of a release whose
// Release.PostRender is set, so the release's recorded manifest is the patched one, and drift
// correction and dry-run diffs compare with what was really applied. The kustomization is built
// in memory (no file, no network, no plugin, no exec): the rendered manifests are its one
// resource, and the Spec's patches, images and labels its transformers.
//
// Digest is what changes of a Spec are recognised by: the engine folds it into the values hash
// it records, so a changed patch upgrades the release as a changed value does.
package postrender
