package client_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/packages/bundle"
)

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
