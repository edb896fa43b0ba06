package client_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/flotilla-dev/flotilla/addons/values"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/registry"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/utils/ptr"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cli/cmd"
	"github.com/flotilla-dev/flotilla/packages/bundle"
	"github.com/flotilla-dev/flotilla/pkg/ociimage"
	"github.com/flotilla-dev/flotilla/pkg/pki"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
	"github.com/flotilla-dev/flotilla/pkg/supervisor"
)

// TestMain lets this test binary be the flotilla binary that EnsureRegistry starts: run as
// `<test binary> registry serve ...` or `<test binary> supervisor ...`, it runs that command of
// the real CLI.
func TestMain(m *testing.M) {
	values.RunWorkerIfRequested() // the manager renders templates in workers: this program run again
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
	g.Expect(bundle.Push(ctx, addr+"/flotilla", s, remoteOpts...)).To(MatchError(ContainSubstring("UNAUTHORIZED")), "no credential, no push")
	_, err = c.Publish(ctx, client.PublishOptions{Registry: addr, KubernetesMinors: []string{"1.36"}, Connection: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).NotTo(HaveOccurred(), "the CLI pushes with the push credential")

	g.Expect(c.StopRegistry(ctx)).To(Succeed())
	_, running = c.RegistryStatus()
	g.Expect(running).To(BeFalse())
	g.Expect(client.RegistryReady(ctx, addr, false)).NotTo(Succeed())

	restarted, err := c.EnsureRegistry(ctx, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(restarted.Started).To(BeTrue())
	listing, err := c.ListBundles(ctx, client.ListBundlesOptions{Registry: addr, KubernetesMinors: []string{"1.36"}, Connection: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).NotTo(HaveOccurred(), "what was pushed before the restart is still there, and anyone pulls it")
	g.Expect(listing).To(HaveLen(1))
	g.Expect(listing[0].Verified).To(Equal("ok"))

	other := &client.Client{Home: t.TempDir(), Executable: exe, Out: &progress}
	_, err = other.EnsureRegistry(ctx, opts)
	g.Expect(err).To(MatchError(ContainSubstring("registry cannot listen on "+addr+": the address is in use by another program")),
		"a registry that cannot listen says why, and is not started")
	_, running = other.RegistryStatus()
	g.Expect(running).To(BeFalse())
}

// The attack of issue 21: another user of the machine replaces the images real nodes pull from
// the embedded registry. It only pulls; the CLI pushes with the credential of its 0700 home,
// which it sends to the registry only while the registry runs (never to whatever listens on the
// address while it does not).
func TestAnotherLocalUserCanNeitherPushNorDeleteWhileTheCLIPushes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	exe, err := os.Executable()
	g.Expect(err).NotTo(HaveOccurred())
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(t.TempDir(), "registry.json"))
	var progress bytes.Buffer
	c := &client.Client{Home: filepath.Join(t.TempDir(), "home"), Executable: exe, Out: &progress}
	t.Cleanup(func() { _ = supervisor.Stop(context.Background(), c.Home) })
	addr := freeAddr(g)
	t.Cleanup(func() { _ = c.StopRegistry(context.Background()) })
	info, err := c.EnsureRegistry(ctx, client.RegistryOptions{Listen: addr})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(info.Authenticated && info.AnonymousPull).To(BeTrue(), "pushes authenticate, pulls do not")

	for path, mode := range map[string]os.FileMode{c.Home: 0o700, c.RegistryHome(): 0o700, c.PushCredentialPath(): 0o600} {
		fi, err := os.Stat(path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fi.Mode().Perm()).To(Equal(mode), path)
	}
	// The home's parent (a test directory) is left open, so that nobody's refusal below is the
	// credential's own modes.
	g.Expect(os.Chmod(filepath.Dir(c.Home), 0o755)).To(Succeed())
	g.Expect(os.Chmod(filepath.Dir(filepath.Dir(c.Home)), 0o755)).To(Succeed())

	plain := registryconn.Config{PlainHTTP: true}
	_, err = c.Publish(ctx, client.PublishOptions{Registry: addr, KubernetesMinors: []string{"1.36"}, Connection: plain})
	g.Expect(err).NotTo(HaveOccurred(), "the CLI pushes with the push credential")
	var cred client.PushCredential
	g.Expect(json.Unmarshal(must(os.ReadFile(c.PushCredentialPath())), &cred)).To(Succeed())
	opts, err := bundle.RemoteOptions(registryconn.Config{PlainHTTP: true, Username: cred.Username, Password: cred.Password})
	g.Expect(err).NotTo(HaveOccurred())
	img, err := random.Image(256, 1)
	g.Expect(err).NotTo(HaveOccurred())
	ref := addr + "/registry.k8s.io/pause:3.10"
	g.Expect(ociimage.Push(ctx, ref, img, opts...)).To(Succeed(), "the push credential pushes images")
	digest := must(img.Digest()).String()
	manifest, err := img.RawManifest()
	g.Expect(err).NotTo(HaveOccurred())
	manifestFile := filepath.Join(filepath.Dir(c.Home), "manifest.json")
	g.Expect(os.WriteFile(manifestFile, manifest, 0o644)).To(Succeed())

	// As nobody, with curl.
	asNobody := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "runuser", append([]string{"-u", "nobody", "--"}, args...)...).CombinedOutput()
		return string(out), err
	}
	curl := func(method, path string, extra ...string) string {
		out, err := asNobody(append([]string{"curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", method, "http://" + addr + path}, extra...)...)
		g.Expect(err).NotTo(HaveOccurred(), out)
		return out
	}
	g.Expect(curl(http.MethodGet, "/v2/registry.k8s.io/pause/manifests/3.10")).To(Equal("200"), "nobody pulls, as real nodes do")
	for _, write := range []struct {
		method, path string
		extra        []string
	}{
		{http.MethodPut, "/v2/registry.k8s.io/pause/manifests/3.10", []string{"-H", "Content-Type: application/vnd.oci.image.manifest.v1+json", "--data-binary", "@" + manifestFile}},
		{http.MethodPost, "/v2/registry.k8s.io/pause/blobs/uploads/", nil},
		{http.MethodDelete, "/v2/registry.k8s.io/pause/manifests/" + digest, nil},
		{http.MethodDelete, "/v2/registry.k8s.io/pause/blobs/" + must(img.ConfigName()).String(), nil},
		{http.MethodPut, "/v2/registry.k8s.io/pause/manifests/3.10", []string{"-u", "flotilla-push:guess", "--data-binary", "@" + manifestFile}},
	} {
		g.Expect(curl(write.method, write.path, write.extra...)).To(Equal("401"), "%s %s by nobody", write.method, write.path)
	}
	out, err := asNobody("cat", c.PushCredentialPath())
	g.Expect(err).To(HaveOccurred(), "nobody reads the push credential: %s", out)
	g.Expect(out).To(ContainSubstring("Permission denied"))
	pulled, err := remote.Image(mustRef(g, ref))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pulled.Digest()).To(Equal(must(img.Digest())), "nothing nobody tried changed the image")

	// With the registry stopped, whatever listens on its address gets no credential.
	g.Expect(c.StopRegistry(ctx)).To(Succeed())
	squatter := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("the CLI sent credentials to a program that is not its registry: %s %s", r.Method, r.URL)
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="squatter"`) // asking for them
		w.WriteHeader(http.StatusUnauthorized)
	}))
	l, err := net.Listen("tcp", addr)
	g.Expect(err).NotTo(HaveOccurred())
	squatter.Listener = l
	squatter.Start()
	defer squatter.Close()
	_, err = c.Publish(ctx, client.PublishOptions{Registry: addr, KubernetesMinors: []string{"1.36"}, Connection: plain})
	g.Expect(err).To(HaveOccurred(), "the registry does not run: no push, and no credential sent")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func mustRef(g Gomega, s string) name.Reference {
	ref, err := name.ParseReference(s)
	g.Expect(err).NotTo(HaveOccurred())
	return ref
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
