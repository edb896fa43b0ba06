// Package publish turns a directory of Helm charts into a published catalog: every chart pushed
// as an OCI Helm chart, and one signed bundle per Kubernetes minor listing them (see package
// bundle). `flotilla registry publish` runs it; so can anyone who publishes their own catalog,
// and tests that need a registry with signed bundles (Options.ChartsDir empty publishes the
// curated catalog embedded in package charts):
//
//	h, _ := ociregistry.NewHandler(ociregistry.Options{Dir: t.TempDir()})
//	srv := httptest.NewServer(h)
//	host := strings.TrimPrefix(srv.URL, "http://")
//	key, _ := bundle.GenerateKey()
//	res, err := publish.Publish(ctx, publish.Options{Registry: host, Repository: "flotilla", Key: key,
//		Connection: registryconn.Config{PlainHTTP: true}})
//
// # Charts
//
// PackageChart packages a chart directory as `helm package` would, with three differences:
//
//   - dependencies that Chart.yaml lists with a file:// repository and that charts/ does not
//     hold yet are packaged from their directories and vendored into the chart, so the pushed
//     chart is self-contained (`helm dependency update` first for dependencies from other
//     repositories);
//   - the chart's default values are checked against its values.schema.json;
//   - every file time in the archive is fixed (2000-01-01), and pushed charts get that creation
//     time too, so the same source always has the same digest: re-publishing is idempotent.
//
// Charts are pushed with Helm's own registry client to
// <registry>/<repository>/<chart>:<version>, so Helm (and pkg/helm) pull them as any OCI chart.
//
// # Bundles
//
// For each Kubernetes minor, Publish builds a bundle of the charts whose Chart.yaml kubeVersion
// admits <minor>.0: one package per chart name, one version per chart directory (newest first),
// each with the chart's manifest digest, its values.schema.json and its package dependencies.
// Package dependencies are other packages of the bundle that must be installed first; a chart
// declares them in the annotation packages.flotilla.dev/dependencies (comma separated). They
// differ from Chart.yaml dependencies, which are subcharts vendored into the chart.
//
// The bundle is build n+1 after the newest build n of that minor in <registry>/<repository>,
// signed with Options.Key and pushed as <registry>/<repository>:v<major>-<minor>-<n+1>; when
// build n already lists the same packages and its signature verifies with Options.Key, nothing
// is pushed and the result says Unchanged. (After a change of key, the next publish makes a new
// build signed with the new key, so clusters that trust only the new key have a bundle.)
package publish
