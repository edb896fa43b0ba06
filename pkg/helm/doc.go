// Package helm is Flotilla's one Helm engine: packages and addons both install charts into
// workload clusters through it, so both get the same promises.
//
// An Engine installs, upgrades, uninstalls, rolls back, diffs and renders Helm releases with the
// Helm v4 SDK. It reaches a cluster only through a *rest.Config held in memory (as CAPI's
// clustercache hands it out): Helm gets a RESTClientGetter built from it, no kubeconfig file is
// ever written, and discovery is cached per cluster. Helm alone would discover a cluster again
// for every install and upgrade; the engine keeps a cluster's version, API versions and REST
// mappings for a minute, and discovers again sooner after it created CRDs and after a failed
// action (so a kind another tool added is there for the retry). Objects are not validated
// against the cluster's OpenAPI document on the client side (Helm fetched and parsed it for
// every action); the API server validates them strictly. Release records are Helm's own
// storage Secrets in the release namespace, so the helm CLI sees the same releases.
//
// # Charts
//
// A ChartRef names a chart in an OCI registry ("oci://host/path", by tag, semver range or
// digest) or in a classic chart repository ("http(s)://", index.yaml, "" = latest, semver
// ranges). Pulled charts are kept in Engine.ChartCache, content-addressed by digest: the OCI
// manifest digest, or the SHA-256 of the archive for classic repositories. Files are written
// atomically, so concurrent callers and killed processes never leave a half chart behind.
// Resolving a tag costs one HEAD request and resolving a repository version one index.yaml
// download; a digest already in the cache is never pulled again, and a pinned digest that is
// cached needs no network at all. A pinned digest is verified after every pull, and a chart
// whose content does not match is refused (ErrDigestMismatch). Stats counts pulls and source
// lookups, so callers can prove that a resync pulled nothing. Registry credentials, CA and TLS
// settings come from Release.Registry (a registryconn.Config) only, never from the Helm or
// Docker credential files of the user running Flotilla, and a classic repository's credentials
// are sent to its own host only.
//
// # Releases
//
// InstallOrUpgrade installs a release that is absent and upgrades one whose chart digest or
// values hash differs from what the deployed release records; otherwise it returns ActionUnchanged
// without a single write to the cluster and without a new revision. The values hash is SHA-256
// over the canonical JSON of the caller's values. Both facts are recorded in the release (chart
// annotations flotilla.dev/chart-digest and flotilla.dev/values-hash, and the same names as
// release labels cut to the length a label value allows).
//
// CRDs in crds/ (the chart's and its subcharts') that the cluster lacks are created before the
// release and waited for until they are served, also on upgrade; existing CRDs are never changed,
// as in Helm. Objects are applied server-side and validated by the API server.
//
// Re-running is always safe. A first install that did not finish (left pending-install by a
// process that died, or failed because the cluster's API server went away) is installed again as
// revision 1, adopting what it applied, so an interrupted install leaves no second revision. A
// release left pending-upgrade or pending-rollback is marked failed and then upgraded, which Helm
// allows from a failed release; one left uninstalling is purged and installed again. Calls for
// the same release are serialised inside an Engine, so a pending release seen while holding
// that lock belongs to nobody alive in this process (so a process shares one Engine between
// its users). History is bounded (MaxHistory, default
// 5). Wait, Timeout, Atomic, SkipCRDs and CreateNamespace mean what they mean in Helm; subcharts
// bundled in a chart's charts/ directory are installed with it, and a chart missing one it
// declares is refused. A cancelled context stops the preparation of a call, never a Helm action
// halfway: that runs to its end, bounded by Timeout.
//
// A chart's templates are code its publisher wrote. The engine renders them first, with
// RenderChart, through Engine.Renderer (a ChartRenderer bounding time and memory, such as the
// manager's render workers; in this process when nil), and hands Helm the chart with every
// template replaced by what it rendered, escaped, so that Helm's own render only copies text
// and what is installed is what rendered. Templates see no cluster: lookup finds nothing, as in
// `helm template`.
//
// Release records are read with bounds (package releasestore): a record of a workload cluster
// is untrusted input, and a gzip bomb in one is refused naming its Secret.
//
// Diff renders with the cluster's version and APIs and compares with the latest revision's
// manifest; Template renders without a cluster and describes the chart (ChartInfo, with its
// values.schema.json). Neither writes anything.
//
// Errors carry Helm's own message. Nothing the engine returns or logs contains credentials or
// kubeconfig bytes.
package helm
