package registryconn

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Mirror is a registry that holds copies of other registries' repositories, each at the path it
// has in its original registry, below the mirror's optional prefix: with the mirror
// "mirror.example.com:5000/copies", 127.0.0.1:5001/flotilla/hello-flotilla is read from
// mirror.example.com:5000/copies/flotilla/hello-flotilla, under the same tags and digests.
// `flotilla packages import` fills a mirror that way.
type Mirror struct {
	// Registry is the mirror's host[:port], optionally followed by the path prefix of the copies.
	// SplitRegistry checks it.
	Registry string
	// Connection says how to reach the mirror: its own credentials, CA and transport. The
	// original registry's credentials never go to a mirror.
	Connection Config
}

// Route returns where c reads repository (a path, such as "flotilla/hello-flotilla") of the
// registry host: the mirror's host, the repository below the mirror's prefix, and the mirror's
// connection when c has a mirror; host, repository and c as they are otherwise. It is the one
// place a mirror rewrites a pull.
func (c Config) Route(host, repository string) (string, string, Config) {
	if c.Mirror == nil {
		return host, repository, c
	}
	mirrorHost, prefix, err := SplitRegistry(c.Mirror.Registry)
	if err != nil {
		// An invalid mirror is refused where it is configured (SplitRegistry); keeping its
		// string as the host makes the request fail rather than reach the original registry.
		mirrorHost, prefix = c.Mirror.Registry, ""
	}
	conn := c.Mirror.Connection
	conn.Mirror = nil
	if prefix != "" {
		repository = prefix + "/" + repository
	}
	return mirrorHost, repository, conn
}

// SplitRegistry splits a registry with an optional path prefix, "host[:port][/prefix]", into
// host and prefix, checking both: the host as an OCI registry's name, the prefix as the start of
// a repository name (lower case, separated by / . _ -).
func SplitRegistry(registry string) (host, prefix string, err error) {
	if registry == "" || strings.Contains(registry, "://") {
		return "", "", fmt.Errorf("registry %q: give host[:port] with an optional path, such as 127.0.0.1:5002 or mirror.example.com/flotilla, without a scheme", registry)
	}
	host, prefix, _ = strings.Cut(registry, "/")
	if _, err := name.NewRegistry(host, name.StrictValidation); err != nil || host != strings.ToLower(host) {
		return "", "", fmt.Errorf("registry %q: %q is not a registry host[:port] (lower case)", registry, host)
	}
	if prefix != "" {
		if _, err := name.NewRepository(host+"/"+prefix, name.StrictValidation); err != nil {
			return "", "", fmt.Errorf("registry %q: the path %q is not a repository path (lower case letters, digits and separators . _ - /)", registry, prefix)
		}
	}
	return host, prefix, nil
}
