package gitops

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/netaddr"
)

// Environment variables the CLI takes HTTPS credentials from (SSH uses the SSH agent).
const (
	// UsernameEnv holds the HTTPS user name.
	UsernameEnv = "FLOTILLA_GIT_USERNAME"
	// PasswordEnv holds the HTTPS password or access token.
	PasswordEnv = "FLOTILLA_GIT_PASSWORD" //nolint:gosec // the name of an environment variable, not a credential
)

// AuthFromSecret returns the credentials to reach url with, from the data of a credentials
// Secret: identity and known_hosts (SSH), or username and password (HTTPS). Errors name the
// missing key, never a value.
func AuthFromSecret(url string, data map[string][]byte) (transport.AuthMethod, error) {
	identity, hasIdentity := data[flotillav1.GitOpsIdentityKey]
	password, hasPassword := data[flotillav1.GitOpsPasswordKey]
	switch {
	case hasIdentity:
		knownHosts, ok := data[flotillav1.GitOpsKnownHostsKey]
		if !ok {
			return nil, fmt.Errorf("key %q is required with %q: add the Git server's host keys (`ssh-keyscan HOST`)",
				flotillav1.GitOpsKnownHostsKey, flotillav1.GitOpsIdentityKey)
		}
		user := "git"
		if ep, err := transport.NewEndpoint(url); err == nil && ep.User != "" {
			user = ep.User
		}
		auth, err := gitssh.NewPublicKeys(user, identity, "")
		if err != nil {
			return nil, fmt.Errorf("key %q is not a usable SSH private key: %w", flotillav1.GitOpsIdentityKey, errors.Unwrap(err))
		}
		callback, err := knownHostsCallback(knownHosts)
		if err != nil {
			return nil, err
		}
		auth.HostKeyCallback = callback
		return auth, nil
	case hasPassword:
		if err := CheckCredentialsTransport(url); err != nil {
			return nil, err
		}
		return &githttp.BasicAuth{Username: string(data[flotillav1.GitOpsUsernameKey]), Password: string(password)}, nil
	default:
		return nil, fmt.Errorf("the Secret has neither %q (SSH, with %q) nor %q (HTTPS, with %q)",
			flotillav1.GitOpsIdentityKey, flotillav1.GitOpsKnownHostsKey, flotillav1.GitOpsPasswordKey, flotillav1.GitOpsUsernameKey)
	}
}

// AuthFromEnv returns the credentials the CLI pushes to url with: UsernameEnv and PasswordEnv
// for an HTTP(S) URL when PasswordEnv is set, else nil (go-git's default: none for HTTPS, the
// SSH agent for SSH). Credentials for a plain http:// URL are refused (CheckCredentialsTransport).
func AuthFromEnv(url string, getenv func(string) string) (transport.AuthMethod, error) {
	if !strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://") {
		return nil, nil
	}
	password := getenv(PasswordEnv)
	if password == "" {
		return nil, nil
	}
	if err := CheckCredentialsTransport(url); err != nil {
		return nil, fmt.Errorf("%s is set: %w", PasswordEnv, err)
	}
	return &githttp.BasicAuth{Username: getenv(UsernameEnv), Password: password}, nil
}

// ErrCredentialsOverHTTP is wrapped by CheckCredentialsTransport's error.
var ErrCredentialsOverHTTP = errors.New("credentials are never sent over plain http://")

// CheckCredentialsTransport refuses a plain http:// URL to a host other than a loopback one
// (localhost, 127.0.0.0/8, ::1): a password sent there crosses the network in clear text, where
// anyone on the path reads it. Over https://, SSH, or to this machine, credentials may go.
func CheckCredentialsTransport(repository string) error {
	if !strings.HasPrefix(strings.ToLower(repository), "http://") {
		return nil
	}
	u, err := url.Parse(repository)
	if err != nil {
		var urlErr *url.Error
		if errors.As(err, &urlErr) {
			err = urlErr.Err // without the URL, which may hold a password
		}
		return fmt.Errorf("the repository is not a valid URL: %w", err)
	}
	if netaddr.IsLoopback(u.Host) {
		return nil
	}
	return fmt.Errorf("%w: the repository %s is plain http:// to %s; use its https:// URL "+
		"(plain http:// is allowed only to a loopback host)", ErrCredentialsOverHTTP, u.Redacted(), u.Hostname())
}

// knownHostsCallback accepts the host keys of known_hosts lines with plain (not hashed) host
// names, as `ssh-keyscan HOST` prints them.
func knownHostsCallback(data []byte) (ssh.HostKeyCallback, error) {
	type known struct {
		hosts []string
		key   ssh.PublicKey
	}
	var entries []known
	for rest := data; len(bytes.TrimSpace(rest)) > 0; {
		_, hosts, key, _, next, err := ssh.ParseKnownHosts(rest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", flotillav1.GitOpsKnownHostsKey, err)
		}
		entries = append(entries, known{hosts: hosts, key: key})
		rest = next
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("key %q holds no host key", flotillav1.GitOpsKnownHostsKey)
	}
	return func(hostname string, _ net.Addr, key ssh.PublicKey) error {
		want := knownhosts.Normalize(hostname)
		for _, e := range entries {
			for _, h := range e.hosts {
				if knownhosts.Normalize(h) == want && bytes.Equal(e.key.Marshal(), key.Marshal()) {
					return nil
				}
			}
		}
		return fmt.Errorf("the %s host key of %s is not in %q of the credentials Secret", key.Type(), hostname, flotillav1.GitOpsKnownHostsKey)
	}, nil
}
