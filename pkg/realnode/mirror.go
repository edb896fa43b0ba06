package realnode

import (
	"context"
	"fmt"

	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
	"github.com/flotilla-dev/flotilla/pkg/registrymirror"
)

// MirrorOf is the image mirror of the real nodes of a cluster: the management cluster's
// registry mirror when one is set (the ConfigMap flotilla-system/registry-mirror, with its
// credentials and CA: package registrymirror), so that no image is pulled from elsewhere once
// a mirror is set; else imageMirror, the registry the cluster's LocalDatacenterConfig names
// (spec.imageMirror), over plain HTTP. Nodes reach only servers on this machine's loopback: a
// mirror elsewhere is an error saying so.
func MirrorOf(ctx context.Context, c ctrlclient.Reader, imageMirror string) (registryconn.Mirror, error) {
	m, err := registrymirror.ClusterWide(ctx, c)
	if err != nil {
		return registryconn.Mirror{}, err
	}
	if m == nil {
		return registryconn.Mirror{Registry: imageMirror, Connection: registryconn.Config{PlainHTTP: true}}, nil
	}
	if _, err := loopbackPort(m.Registry); err != nil {
		return registryconn.Mirror{}, fmt.Errorf("ConfigMap %s: the registry %q is the mirror of every pull, real nodes' images included, but real nodes reach no other machine: %w; serve the mirror on this machine (flotilla registry serve --listen 127.0.0.1:<port>)",
			registrymirror.Key, m.Registry, err)
	}
	return *m, nil
}

// mirrorPort is the port of the image mirror, which must be on loopback.
func (cfg Config) mirrorPort() (uint16, error) {
	port, err := loopbackPort(cfg.Mirror.Registry)
	if err != nil {
		return 0, fmt.Errorf("image mirror: %w", err)
	}
	return port, nil
}

// loopbackPort is the port of registry (host[:port][/prefix]), whose host must be on this
// machine's loopback (nodenet.LoopbackPort): the one rule for a mirror of real nodes.
func loopbackPort(registry string) (uint16, error) {
	host, _, err := registryconn.SplitRegistry(registry)
	if err != nil {
		return 0, err
	}
	return nodenet.LoopbackPort(host)
}
