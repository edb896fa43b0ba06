// Package charttest gives tests small Helm charts and the places Flotilla reads charts from: an
// in-process OCI registry and a classic chart repository (index.yaml and archives) served over
// HTTP. It is imported only by _test.go files.
//
// A Chart is a name, a version and its files by path; Hello returns the web app most tests
// install, a ConfigMap made from values and a Deployment, with a values.schema.json:
//
//	host, stop := charttest.StartRegistry()
//	defer stop()
//	digest := charttest.Push(t, host+"/charts", charttest.Hello("0.1.0"))
//	// oci://<host>/charts/hello, version 0.1.0, manifest digest digest
//
//	reg, err := charttest.StartSecureRegistry() // TLS and a user, as Flotilla's registry off loopback
//	defer reg.Close()
//	digest = reg.Push(t, reg.Host+"/charts", charttest.Hello("0.1.0"))
//
//	url := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
//	// a classic repository at url holding hello-1.0.0.tgz
//
// GzipBombRecord and ReleaseRecordSecret forge Helm release records, as a hostile workload
// cluster may hold them.
//
// Every helper fails the test (t.Fatal) when something goes wrong, and cleans up after it.
package charttest
