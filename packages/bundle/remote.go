package bundle

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry says how to reach an OCI registry: credentials and transport. Its fields are those
// of pkg/helm's Registry, so one set of settings serves bundles and charts.
type Registry struct {
	// Username and Password are basic credentials (or a token as the password); without them,
	// requests are anonymous.
	Username, Password string
	// CAData is a PEM bundle of certificate authorities trusted besides the system's.
	CAData []byte
	// InsecureSkipTLSVerify skips verifying the registry's certificate.
	InsecureSkipTLSVerify bool
	// PlainHTTP speaks http:// instead of https://. Without it only HTTPS is spoken: the
	// transport refuses the plain HTTP fallback go-containerregistry otherwise tries for
	// localhost, loopback and private addresses. Set it for loopback registries (netaddr.IsLoopback).
	PlainHTTP bool
}

// RemoteOptions returns go-containerregistry options for r: pass them to Push, Pull and List.
func RemoteOptions(r Registry) ([]remote.Option, error) {
	t, err := r.Transport()
	if err != nil {
		return nil, err
	}
	opts := []remote.Option{remote.WithTransport(t)}
	if r.Username != "" || r.Password != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.Username, Password: r.Password}))
	}
	return opts, nil
}

// Transport returns an http.RoundTripper with r's TLS settings that speaks plain HTTP when
// r.PlainHTTP is set, and refuses to otherwise.
func (r Registry) Transport() (http.RoundTripper, error) {
	base, ok := remote.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, errors.New("go-containerregistry's default transport is not an *http.Transport")
	}
	t := base.Clone()
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: r.InsecureSkipTLSVerify} //nolint:gosec // the user asked for it
	if len(r.CAData) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(r.CAData) {
			return nil, errors.New("registry CA: no PEM certificate found")
		}
		t.TLSClientConfig.RootCAs = pool
	}
	if r.PlainHTTP {
		return plainHTTP{t}, nil
	}
	return httpsOnly{t}, nil
}

// httpsOnly refuses http:// requests.
type httpsOnly struct{ next http.RoundTripper }

func (h httpsOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return nil, fmt.Errorf("refusing plain HTTP to %s: the registry is reached over HTTPS unless plain HTTP is asked for (--plain-http)", req.URL.Host)
	}
	return h.next.RoundTrip(req)
}

// plainHTTP sends https:// requests as http://.
type plainHTTP struct{ next http.RoundTripper }

func (p plainHTTP) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "https" {
		req = req.Clone(req.Context())
		req.URL.Scheme = "http"
	}
	return p.next.RoundTrip(req)
}
