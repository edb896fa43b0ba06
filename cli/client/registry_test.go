package client_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cli/cmd"
	"github.com/flotilla-dev/flotilla/packages/bundle"
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
	l, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	addr := l.Addr().String()
	g.Expect(l.Close()).To(Succeed())
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
	remoteOpts, err := bundle.RemoteOptions(bundle.Registry{PlainHTTP: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bundle.Push(ctx, addr+"/flotilla", s, remoteOpts...)).To(Succeed())

	g.Expect(c.StopRegistry(ctx)).To(Succeed())
	_, running = c.RegistryStatus()
	g.Expect(running).To(BeFalse())
	g.Expect(client.RegistryReady(ctx, addr)).NotTo(Succeed())

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
