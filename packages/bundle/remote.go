package bundle

import (
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
	if r.Username != "" || r.Password != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.Username, Password: r.Password}))
	}
	return opts, nil
}
