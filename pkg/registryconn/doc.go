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
// only to a loopback address (pkg/netaddr.IsLoopback).
package registryconn
