package gitops

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

// hostKey returns a new SSH public key and its known_hosts line for host.
func hostKey(g Gomega, host string) (ssh.PublicKey, []byte) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	key, err := ssh.NewPublicKey(pub)
	g.Expect(err).NotTo(HaveOccurred())
	return key, []byte(host + " " + string(ssh.MarshalAuthorizedKey(key)))
}

func identity(g Gomega) []byte {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	block, err := ssh.MarshalPrivateKey(priv, "")
	g.Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(block)
}

func TestAuthFromSecret(t *testing.T) {
	g := NewWithT(t)
	key, knownHosts := hostKey(g, "git.example.com")
	otherKey, _ := hostKey(g, "git.example.com")
	id := identity(g)

	tests := []struct {
		name    string
		url     string
		data    map[string][]byte
		check   func(g Gomega, auth any)
		wantErr string
	}{
		{
			name: "username and password authenticate over HTTPS",
			url:  "https://git.example.com/fleet.git",
			data: map[string][]byte{"username": []byte("bot"), "password": []byte("token")},
			check: func(g Gomega, auth any) {
				g.Expect(auth).To(Equal(&githttp.BasicAuth{Username: "bot", Password: "token"}))
			},
		},
		{
			name:    "username and password are never sent over plain HTTP to another machine",
			url:     "http://git.example.com/fleet.git",
			data:    map[string][]byte{"username": []byte("bot"), "password": []byte("token")},
			wantErr: "credentials are never sent over plain http://: the repository http://git.example.com/fleet.git is plain http:// to git.example.com; use its https:// URL",
		},
		{
			name: "username and password may go over plain HTTP to this machine",
			url:  "http://127.0.0.1:8080/fleet.git",
			data: map[string][]byte{"username": []byte("bot"), "password": []byte("token")},
			check: func(g Gomega, auth any) {
				g.Expect(auth).To(Equal(&githttp.BasicAuth{Username: "bot", Password: "token"}))
			},
		},
		{
			name: "an identity authenticates over SSH as the URL's user, checking the host key",
			url:  "deploy@git.example.com:fleet.git",
			data: map[string][]byte{"identity": id, "known_hosts": knownHosts},
			check: func(g Gomega, auth any) {
				keys, ok := auth.(*gitssh.PublicKeys)
				g.Expect(ok).To(BeTrue())
				g.Expect(keys.User).To(Equal("deploy"))
				addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}
				g.Expect(keys.HostKeyCallback("git.example.com:22", addr, key)).To(Succeed())
				g.Expect(keys.HostKeyCallback("git.example.com:22", addr, otherKey)).To(MatchError(ContainSubstring("host key of git.example.com:22 is not in \"known_hosts\"")))
				g.Expect(keys.HostKeyCallback("evil.example.com:22", addr, key)).NotTo(Succeed())
			},
		},
		{
			name:    "an identity without known_hosts is refused",
			url:     "ssh://git@git.example.com/fleet.git",
			data:    map[string][]byte{"identity": id},
			wantErr: `key "known_hosts" is required with "identity"`,
		},
		{
			name:    "an identity that is not a key is refused without showing it",
			url:     "ssh://git@git.example.com/fleet.git",
			data:    map[string][]byte{"identity": []byte("not a key"), "known_hosts": knownHosts},
			wantErr: `key "identity" is not a usable SSH private key`,
		},
		{
			name:    "a Secret without credentials is refused naming the keys",
			url:     "https://git.example.com/fleet.git",
			data:    map[string][]byte{"token": []byte("x")},
			wantErr: `the Secret has neither "identity" (SSH, with "known_hosts") nor "password" (HTTPS, with "username")`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			auth, err := AuthFromSecret(tt.url, tt.data)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("not a key"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, auth)
		})
	}
}

func TestAuthFromEnv(t *testing.T) {
	env := map[string]string{UsernameEnv: "me", PasswordEnv: "secret"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name    string
		url     string
		env     func(string) string
		want    any
		wantErr string
	}{
		{name: "HTTPS with a password set uses it", url: "https://git.example.com/fleet.git", env: getenv,
			want: &githttp.BasicAuth{Username: "me", Password: "secret"}},
		{name: "HTTPS without a password uses none", url: "https://git.example.com/fleet.git", env: func(string) string { return "" }},
		{name: "SSH is left to the agent", url: "git@git.example.com:fleet.git", env: getenv},
		{name: "a path needs none", url: "/srv/fleet.git", env: getenv},
		{name: "plain HTTP to localhost with a password set uses it", url: "http://localhost:3000/fleet.git", env: getenv,
			want: &githttp.BasicAuth{Username: "me", Password: "secret"}},
		{name: "plain HTTP to another machine with a password set is refused", url: "http://git.example.com/fleet.git", env: getenv,
			wantErr: "FLOTILLA_GIT_PASSWORD is set: credentials are never sent over plain http://"},
		{name: "plain HTTP to another machine without a password needs none", url: "http://git.example.com/fleet.git", env: func(string) string { return "" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			auth, err := AuthFromEnv(tt.url, tt.env)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("secret"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == nil {
				g.Expect(auth).To(BeNil())
				return
			}
			g.Expect(auth).To(Equal(tt.want))
		})
	}
}
