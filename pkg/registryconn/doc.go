// Package registryconn says how Flotilla reaches an OCI registry or a chart repository: basic
// credentials, extra certificate
// authorities, skipping TLS verification, plain HTTP. It is the one set of settings behind
// charts (pkg/helm's engine, and the Helm client that publishes them) and bundles
// (packages/bundle), and the one place their TLS settings are made.
//
// Config.TLSConfig is the TLS side alone: TLS 1.2 or newer, the system's roots plus CAData,
// certificates verified unless InsecureSkipTLSVerify. Config.Transport adds the scheme policy of
// OCI clients: with PlainHTTP every request goes over http://; without it only HTTPS is spoken,
// and go-containerregistry's fallback to plain HTTP for loopback and private addresses is
// refused, so a registry the user did not mark as plain never sees a request in the clear. Even
// with PlainHTTP, a request carrying credentials (an Authorization header) is sent in the clear
// only to a loopback address (pkg/netaddr.IsLoopback). Requests go through the proxy the
// process environment names (HTTPS_PROXY, HTTP_PROXY, NO_PROXY, as Go's http.ProxyFromEnvironment
// reads them), as every HTTP client of Flotilla's manager does.
//
// A Config may carry a Mirror: a registry holding copies of other registries' repositories at
// the same paths, below an optional prefix. Config.Route is the one place a pull is rewritten:
// it returns the mirror's host, the repository below its prefix and the mirror's own
// connection, so the original registry is never reached and its credentials never go to the
// mirror. SplitRegistry checks a mirror's "host[:port][/prefix]".
package registryconn
