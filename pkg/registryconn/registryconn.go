package registryconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla-dev/flotilla/pkg/netaddr"
)

// Config says how to reach a registry: credentials and transport.
type Config struct {
	// Username and Password are basic credentials (or a token as the password); without them,
	// requests are anonymous. Callers that look up stored credentials (the CLI reads Helm's and
	// Docker's) put what they found here.
	Username, Password string
	// CAData is a PEM bundle of certificate authorities trusted besides the system's.
	CAData []byte
	// InsecureSkipTLSVerify skips verifying the registry's certificate.
	InsecureSkipTLSVerify bool
	// PlainHTTP speaks http:// instead of https:// (meant for loopback registries).
	PlainHTTP bool
	// Mirror, when set, is where every pull of this registry's repositories goes instead
	// (Route), with the mirror's own connection: the original registry is never reached.
	Mirror *Mirror
}

// ErrNoCACertificate is TLSConfig's error when CAData holds no PEM certificate.
var ErrNoCACertificate = errors.New("the registry CA data holds no PEM certificate")

// TLSConfig returns c's TLS settings: TLS 1.2 or newer, the system's roots and CAData trusted,
// certificates verified unless InsecureSkipTLSVerify.
func (c Config) TLSConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: c.InsecureSkipTLSVerify} //nolint:gosec // the user asked for it
	if len(c.CAData) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(c.CAData) {
			return nil, ErrNoCACertificate
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// Transport returns an http.RoundTripper for OCI clients (go-containerregistry, Helm's
// registry client): go-containerregistry's default transport with c's TLS settings, which
// speaks plain HTTP when c.PlainHTTP is set and refuses to otherwise.
func (c Config) Transport() (http.RoundTripper, error) {
	base, ok := remote.DefaultTransport.(*http.Transport)
	if !ok {
		return nil, errors.New("go-containerregistry's default transport is not an *http.Transport")
	}
	tlsConfig, err := c.TLSConfig()
	if err != nil {
		return nil, err
	}
	t := base.Clone()
	t.TLSClientConfig = tlsConfig
	if c.PlainHTTP {
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

// plainHTTP sends https:// requests as http://, and refuses to send credentials in the clear to
// a registry off this machine.
type plainHTTP struct{ next http.RoundTripper }

func (p plainHTTP) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" && !netaddr.IsLoopback(req.URL.Host) {
		return nil, fmt.Errorf("refusing to send credentials to %s over plain HTTP, which anyone on the way can read: reach it over HTTPS", req.URL.Host)
	}
	if req.URL.Scheme == "https" {
		req = req.Clone(req.Context())
		req.URL.Scheme = "http"
	}
	return p.next.RoundTrip(req)
}
