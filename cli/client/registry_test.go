package client_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/registry"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cli/cmd"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/pki"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

// TestMain lets this test binary be the flotilla binary that EnsureRegistry starts: run as
// `<test binary> registry serve ...` or `<test binary> supervisor ...`, it runs that command of
// the real CLI.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && (os.Args[1] == "registry" && os.Args[2] == "serve" || os.Args[1] == "supervisor") {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		root := cmd.NewRootCmd(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
		root.SetArgs(os.Args[1:])
		err := root.ExecuteContext(ctx)
		stop()
		if err != nil {
			_, _ = os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestTheBackgroundRegistryOutlivesItsStarterAndKeepsItsData(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	exe, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	var progress bytes.Buffer
	c := &client.Client{Home: t.TempDir(), Executable: exe, Out: &progress}
	t.Cleanup(func() { _ = supervisor.Stop(context.Background(), c.Home) })
	addr := freeAddr(g)
	opts := client.RegistryOptions{Listen: addr}
	t.Cleanup(func() { _ = c.StopRegistry(context.Background()) })

	first, err := c.EnsureRegistry(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(first.Started).To(BeTrue())
	g.Expect(first.Dir).To(Equal(c.DefaultRegistryDataDir()))
	again, err := c.EnsureRegistry(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Started).To(BeFalse(), "a running registry is left alone")
	g.Expect(again.PID).To(Equal(first.PID))
	status, running := c.RegistryStatus()
	g.Expect(running).To(BeTrue())
	g.Expect(status.Address).To(Equal(addr))

	key, err := bundle.GenerateKey()
	g.Expect(err).NotTo(HaveOccurred())
	s, err := bundle.Sign(bundle.Bundle{Name: "v1-36-1", KubernetesMinor: "1.36", Build: 1}, key)
	g.Expect(err).NotTo(HaveOccurred())
	remoteOpts, err := bundle.RemoteOptions(registryconn.Config{PlainHTTP: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Push(ctx, addr+"/flotilla", s, remoteOpts...)).To(Succeed())

	g.Expect(c.StopRegistry(ctx)).To(Succeed())
	_, running = c.RegistryStatus()
	g.Expect(running).To(BeFalse())
	g.Expect(client.RegistryReady(ctx, addr, false)).NotTo(Succeed())

	restarted, err := c.EnsureRegistry(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(restarted.Started).To(BeTrue())
	pulled, err := bundle.Pull(ctx, addr+"/flotilla:v1-36-1", remoteOpts...)
	g.Expect(err).NotTo(HaveOccurred(), "what was pushed before the restart is still there")
	g.Expect(bundle.Verify(pulled, &key.PublicKey)).To(Succeed())

	other := &client.Client{Home: t.TempDir(), Executable: exe, Out: &progress}
	_, err = other.EnsureRegistry(ctx, opts)
	g.Expect(err).To(MatchError(ContainSubstring("registry cannot listen on "+addr+": the address is in use by another program")),
		"a registry that cannot listen says why, and is not started")
	_, running = other.RegistryStatus()
	g.Expect(running).To(BeFalse())
}

func TestSigningKeyIsGeneratedOnceWithItsPublicKeyNextToIt(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "registry", "signing-key.pem")

	_, _, _, err := client.LoadOrCreateSigningKey(path, false)
	g.Expect(err).To(MatchError(ContainSubstring("reading the signing key")), "a key the user names must exist")

	key, pubPath, created, err := client.LoadOrCreateSigningKey(path, true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTrue())
	g.Expect(pubPath).To(Equal(filepath.Join(filepath.Dir(path), "signing-key.pub.pem")))
	fi, err := os.Stat(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))

	again, _, created, err := client.LoadOrCreateSigningKey(path, true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeFalse())
	g.Expect(again.Equal(key)).To(BeTrue(), "the same key is used on every run")

	pubPEM, err := os.ReadFile(pubPath)
	g.Expect(err).NotTo(HaveOccurred())
	pub, err := bundle.ParsePublicKey(pubPEM)
	g.Expect(err).NotTo(HaveOccurred())
	s, err := bundle.Sign(bundle.Bundle{Name: "v1-36-1", KubernetesMinor: "1.36", Build: 1}, key)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Verify(s, pub)).To(Succeed())
}

func TestARegistryWithTLSAndUsersTakesTheCatalogFromItsUsersOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	exe, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	var progress bytes.Buffer
	c := &client.Client{Home: t.TempDir(), Executable: exe, Out: &progress}
	t.Cleanup(func() { _ = supervisor.Stop(context.Background(), c.Home) })
	tlsDir := t.TempDir()
	ca, err := pki.NewCA("registry-ca")
	g.Expect(err).NotTo(HaveOccurred())
	serving, err := pki.NewServingCert(ca, "registry", nil, []net.IP{net.ParseIP("127.0.0.1")})
	g.Expect(err).NotTo(HaveOccurred())
	certFile, keyFile, caFile := filepath.Join(tlsDir, "tls.crt"), filepath.Join(tlsDir, "tls.key"), filepath.Join(tlsDir, "ca.crt")
	g.Expect(serving.WriteFiles(certFile, keyFile)).To(Succeed())
	g.Expect(os.WriteFile(caFile, ca.CertPEM, 0o600)).To(Succeed())
	const user, password = "publisher", "Pa55-for-publishing"
	htpasswd, err := c.SetRegistryUser("", user, password)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(htpasswd).To(Equal(c.DefaultRegistryHTPasswdPath()))
	addr := freeAddr(g)
	t.Cleanup(func() { _ = c.StopRegistry(context.Background()) })

	info, err := c.EnsureRegistry(ctx, client.RegistryOptions{Listen: addr, TLSCertFile: certFile, TLSKeyFile: keyFile, HTPasswdFile: htpasswd})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.TLS).To(BeTrue())
	g.Expect(info.Authenticated).To(BeTrue())
	status, running := c.RegistryStatus()
	g.Expect(running).To(BeTrue())
	g.Expect(status.TLS && status.Authenticated).To(BeTrue(), "status reads how it serves from its command line")
	g.Expect(client.RegistryReady(ctx, addr, true)).To(Succeed())

	// Neither flags nor stored credentials: refused.
	dockerConfig := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dockerConfig)
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(t.TempDir(), "registry.json"))
	publish := func(conn registryconn.Config) error {
		_, err := c.Publish(ctx, client.PublishOptions{Registry: addr, KubernetesMinors: []string{"1.36"}, Connection: conn})
		return err
	}
	anonymous, err := client.RegistryConnection(ctx, client.RegistryConnectionOptions{Registry: addr, CAFile: caFile})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(anonymous.PlainHTTP).To(BeFalse(), "a CA file means TLS, even on loopback")
	g.Expect(anonymous.Username).To(BeEmpty())
	g.Expect(publish(anonymous)).To(MatchError(ContainSubstring("wants a user and password: pass --username and --password, or log in with 'helm registry login " + addr + "'")))
	wrong, err := client.RegistryConnection(ctx, client.RegistryConnectionOptions{Registry: addr, CAFile: caFile, Username: user, Password: "guess"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(publish(wrong)).To(MatchError(ContainSubstring("wants a user and password")))

	// What `docker login` stores.
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	g.Expect(os.WriteFile(filepath.Join(dockerConfig, "config.json"), []byte(`{"auths":{"`+addr+`":{"auth":"`+auth+`"}}}`), 0o600)).To(Succeed())
	docker, err := client.RegistryConnection(ctx, client.RegistryConnectionOptions{Registry: addr, CAFile: caFile})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docker.Username).To(Equal(user))
	g.Expect(publish(docker)).To(Succeed())

	// What `helm registry login` stores, without Docker's.
	g.Expect(os.Remove(filepath.Join(dockerConfig, "config.json"))).To(Succeed())
	helmClient, err := registry.NewClient(registry.ClientOptCredentialsFile(os.Getenv("HELM_REGISTRY_CONFIG")), registry.ClientOptWriter(io.Discard))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(helmClient.Login(addr, registry.LoginOptBasicAuth(user, password), registry.LoginOptTLSClientConfig("", "", caFile))).To(Succeed())
	helmLogin, err := client.RegistryConnection(ctx, client.RegistryConnectionOptions{Registry: addr, CAFile: caFile})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(helmLogin.Username).To(Equal(user))
	listing, err := c.ListBundles(ctx, client.ListBundlesOptions{Registry: addr, KubernetesMinors: []string{"1.36"}, Connection: helmLogin})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(listing).To(HaveLen(1))
	g.Expect(listing[0].Verified).To(Equal("ok"))
	g.Expect(listing[0].Packages).To(ContainElement(HavePrefix("hello-flotilla@")))
	_, err = c.ListBundles(ctx, client.ListBundlesOptions{Registry: addr, KubernetesMinors: []string{"1.36"}, Connection: anonymous})
	g.Expect(err).To(MatchError(ContainSubstring("wants a user and password")), "reading needs a user too")

	_, err = client.RegistryConnection(ctx, client.RegistryConnectionOptions{Registry: "registry.example.com", PlainHTTP: ptr.To(true), Username: user, Password: password})
	g.Expect(err).To(MatchError(ContainSubstring("refusing to send the credentials for registry.example.com over plain HTTP")))

	logData, err := os.ReadFile(info.Log)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(logData)).To(ContainSubstring(`user="publisher"`))
	g.Expect(string(logData)).NotTo(ContainSubstring(password), "no password in the registry's log")
	g.Expect(string(logData)).NotTo(ContainSubstring(auth), "no credentials in the registry's log")
}

func freeAddr(g Gomega) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
	return addr
}
