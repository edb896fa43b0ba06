package registryconn

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestAMirrorTakesEveryPullWithItsOwnConnection(t *testing.T) {
	g := NewWithT(t)
	original := Config{Username: "origin-user", Password: "origin-secret", PlainHTTP: true}

	host, repo, conn := original.Route("127.0.0.1:5001", "flotilla/hello")
	g.Expect([]string{host, repo}).To(Equal([]string{"127.0.0.1:5001", "flotilla/hello"}), "without a mirror, the original")
	g.Expect(conn.Username).To(Equal("origin-user"))

	original.Mirror = &Mirror{Registry: "mirror.example.com:5000/copies", Connection: Config{Username: "mirror-user", Password: "mirror-secret", CAData: []byte("ca")}}
	host, repo, conn = original.Route("127.0.0.1:5001", "flotilla/hello")
	g.Expect([]string{host, repo}).To(Equal([]string{"mirror.example.com:5000", "copies/flotilla/hello"}))
	g.Expect(conn).To(Equal(Config{Username: "mirror-user", Password: "mirror-secret", CAData: []byte("ca")}),
		"the mirror's credentials, never the original's, and no plain HTTP the mirror did not ask for")

	original.Mirror.Registry = "127.0.0.1:5002"
	host, repo, _ = original.Route("ghcr.io", "org/chart")
	g.Expect([]string{host, repo}).To(Equal([]string{"127.0.0.1:5002", "org/chart"}), "every registry goes to the mirror")
}

func TestSplitRegistryAcceptsAHostWithAnOptionalPath(t *testing.T) {
	tests := []struct {
		registry, host, prefix, wantErr string
	}{
		{registry: "127.0.0.1:5002", host: "127.0.0.1:5002"},
		{registry: "mirror.example.com/flotilla/copies", host: "mirror.example.com", prefix: "flotilla/copies"},
		{registry: "https://mirror.example.com", wantErr: "without a scheme"},
		{registry: "", wantErr: "give host[:port]"},
		{registry: "Mirror.example.com", wantErr: "is not a registry host"},
		{registry: "mirror.example.com/Upper", wantErr: "is not a repository path"},
	}
	for _, tt := range tests {
		t.Run(tt.registry, func(t *testing.T) {
			g := NewWithT(t)
			host, prefix, err := SplitRegistry(tt.registry)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect([]string{host, prefix}).To(Equal([]string{tt.host, tt.prefix}))
		})
	}
}
