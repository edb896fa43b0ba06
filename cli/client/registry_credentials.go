package client

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flotilla-dev/flotilla/pkg/atomicfile"
	"github.com/flotilla-dev/flotilla/pkg/netaddr"
	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// pushUser is the user name of the embedded registry's push credential.
const pushUser = "flotilla-push"

// PushCredential is the user and password that push to and delete from the embedded registry
// when it runs without --htpasswd; every other client may only pull.
type PushCredential struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// PushCredentialPath is the embedded registry's push credential, <home>/registry/push-credentials
// (mode 0600, in the 0700 home): a JSON object with username and password.
func (c *Client) PushCredentialPath() string {
	return filepath.Join(c.RegistryHome(), "push-credentials")
}

// pushHTPasswdPath is the htpasswd file of the push credential, which the registry reads.
func (c *Client) pushHTPasswdPath() string { return filepath.Join(c.RegistryHome(), "push.htpasswd") }

// ensurePushCredential generates the push credential and its htpasswd file unless they exist.
func (c *Client) ensurePushCredential() error {
	for _, dir := range []string{c.Home, c.RegistryHome()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	cred, err := c.readPushCredential()
	created := false
	if errors.Is(err, fs.ErrNotExist) {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return fmt.Errorf("generating the registry's push credential: %w", err)
		}
		cred = PushCredential{Username: pushUser, Password: base64.RawURLEncoding.EncodeToString(secret)}
		data, _ := json.Marshal(cred) //nolint:gosec // the password belongs in this file: 0600, in the 0700 home
		if err := atomicfile.Write(c.PushCredentialPath(), append(data, '\n')); err != nil {
			return fmt.Errorf("writing the registry's push credential: %w", err)
		}
		created = true
	} else if err != nil {
		return err
	}
	if _, err := os.Stat(c.pushHTPasswdPath()); err == nil && !created {
		return nil
	}
	// A new credential replaces the file, so that no earlier password is left in it.
	if err := os.Remove(c.pushHTPasswdPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replacing %s: %w", c.pushHTPasswdPath(), err)
	}
	return ociregistry.SetHTPasswdUser(c.pushHTPasswdPath(), cred.Username, cred.Password)
}

// readPushCredential reads the push credential; an error wrapping fs.ErrNotExist when there is
// none.
func (c *Client) readPushCredential() (PushCredential, error) {
	path := c.PushCredentialPath()
	data, err := os.ReadFile(path) //nolint:gosec // in Flotilla's home
	if err != nil {
		return PushCredential{}, fmt.Errorf("reading the registry's push credential: %w", err)
	}
	var cred PushCredential
	if err := json.Unmarshal(data, &cred); err != nil || cred.Username == "" || cred.Password == "" {
		return PushCredential{}, fmt.Errorf("%s is not a push credential ({\"username\": ..., \"password\": ...}): delete it and restart the registry ('flotilla registry stop', 'flotilla registry start') to generate another", path)
	}
	return cred, nil
}

// withPushCredential gives conn, which pushes to registry (host[:port][/prefix]), the push
// credential when it has no credentials and registry is where this home's embedded registry
// runs now: the credential goes to that registry only, and never to another program that
// listens on its address while it does not run (the registry holds the address while it runs).
// What pushes for the CLI (Publish, BuildImages, ImportPackages) calls it.
func (c *Client) withPushCredential(conn registryconn.Config, registry string) (registryconn.Config, error) {
	host, _, err := registryconn.SplitRegistry(registry)
	if err != nil || conn.Username != "" || !netaddr.IsLoopback(host) {
		return conn, nil //nolint:nilerr // an invalid registry is the caller's to report
	}
	info, running := c.RegistryStatus()
	if !running || info.Address != host {
		return conn, nil
	}
	cred, err := c.readPushCredential()
	if errors.Is(err, fs.ErrNotExist) {
		return conn, nil // it runs with users of its own (--htpasswd)
	}
	if err != nil {
		return conn, err
	}
	conn.Username, conn.Password = cred.Username, cred.Password
	return conn, nil
}
