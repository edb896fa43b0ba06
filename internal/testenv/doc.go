// Package testenv runs integration tests against a real kube-apiserver and etcd: the binaries
// Flotilla builds from source (`make controlplane-binaries`, which runs `flotilla binaries
// build`), started by controller-runtime's envtest. There is no fake API server in Flotilla's tests.
//
// Start one Environment per test package from TestMain; it installs Flotilla's and Cluster API's
// CRDs (package config) and returns a rest.Config, a Scheme holding every API group Flotilla works
// with, and an uncached Client:
//
//	var env *testenv.Environment
//
//	func TestMain(m *testing.M) {
//		os.Exit(testenv.Run(m, testenv.Options{}, func(e *testenv.Environment) { env = e }))
//	}
//
// Each test then works in its own namespace (env.NewNamespace(t)) and asserts on the state of the
// API server with Gomega's Eventually.
//
// With Options.Webhooks, Flotilla's admission webhook configurations are installed too, pointing
// at https://127.0.0.1:<port>; the test serves them from the manager env.StartManager starts.
//
// Every manager a test runs is started through RunManager (StartManager uses it), which returns
// only once the manager is ready for the test's first request: its webhook server listens (until
// then the API server's calls to it are refused, and so are the objects they admit), its cache
// has synced, and any further check passes (Flotilla's own manager, from manager.New, adds its
// Ready: its webhooks are registered with the API server). The API server's view of webhook
// configurations lags a moment behind their creation and deletion: a test that registers or
// removes some waits for the API server's behaviour to change, not for the objects.
//
// When the binaries are missing, Start fails with the command that builds them.
package testenv
