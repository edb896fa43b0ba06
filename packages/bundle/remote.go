package bundle

import (
	"net"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// RemoteOptions returns go-containerregistry options for r: pass them to Push, Pull and List.
func RemoteOptions(r registryconn.Config) ([]remote.Option, error) {
	t, err := r.Transport()
	if err != nil {
		return nil, err
	}
	opts := []remote.Option{remote.WithTransport(t)}
	switch {
	case r.Username != "" || r.Password != "":
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.Username, Password: r.Password}))
	case r.DockerConfig:
		opts = append(opts, remote.WithAuthFromKeychain(authn.DefaultKeychain))
	}
	return opts, nil
}

// IsLoopback is true for registries on this machine only (localhost, 127.0.0.0/8, ::1), which
// Flotilla reaches over plain HTTP by default; every other registry gets TLS.
func IsLoopback(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}
