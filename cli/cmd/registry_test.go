package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/flotilla-dev/flotilla/pkg/ociregistry"
)

// runWithInput runs flotilla with args in-process, with input on its input stream.
func runWithInput(input string, args ...string) (stdout string, err error) {
	streams, in, out, _ := genericiooptions.NewTestIOStreams()
	in.WriteString(input)
	root := NewRootCmd(streams)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), err
}

func TestTheRegistryIsNotServedOffLoopbackWithoutTLSAndAuthentication(t *testing.T) {
	for _, verb := range []string{"serve", "start"} {
		t.Run(verb+" refuses every interface without TLS and users, before starting anything", func(t *testing.T) {
			g := NewWithT(t)
			home := t.TempDir()
			_, _, err := run("registry", verb, "--listen", "0.0.0.0:5001", "--home", home)
			g.Expect(err).To(MatchError(And(
				ContainSubstring("--listen 0.0.0.0:5001 is not a loopback address"),
				ContainSubstring("add TLS (--tls-cert-file and --tls-key-file"),
				ContainSubstring("and authentication (--htpasswd FILE"),
				ContainSubstring("or listen on 127.0.0.1"))))
			g.Expect(os.ReadDir(home)).To(BeEmpty(), "no data directory, pid file or log: nothing ran")
		})
	}
	t.Run("serve with TLS only asks for the users", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run("registry", "serve", "--listen", "192.0.2.1:5001", "--home", t.TempDir(),
			"--tls-cert-file", "tls.crt", "--tls-key-file", "tls.key")
		g.Expect(err).To(MatchError(ContainSubstring("add authentication (--htpasswd FILE")))
		g.Expect(err).NotTo(MatchError(ContainSubstring("add TLS")))
	})
	t.Run("start refuses a certificate without its key", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := run("registry", "start", "--home", t.TempDir(), "--tls-cert-file", "tls.crt")
		g.Expect(err).To(MatchError(ContainSubstring("--tls-cert-file and --tls-key-file go together")))
	})
}

func TestRegistryHTPasswdSetsAUsersPasswordFromTheInput(t *testing.T) {
	g := NewWithT(t)
	home := t.TempDir()
	out, err := runWithInput("first password\n", "registry", "htpasswd", "ci", "--home", home)
	g.Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(home, "registry", "htpasswd")
	g.Expect(out).To(Equal("Set the password of ci in " + file + "\n"))
	_, err = runWithInput("other\n", "registry", "htpasswd", "alice", "--home", home)
	g.Expect(err).NotTo(HaveOccurred())
	data, err := os.ReadFile(file)
	g.Expect(err).NotTo(HaveOccurred())
	users, err := ociregistry.ParseHTPasswd(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(users).To(HaveLen(2))
	g.Expect(string(data)).NotTo(ContainSubstring("password"), "only hashes are stored")
	fi, err := os.Stat(file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o600)))

	_, err = runWithInput("", "registry", "htpasswd", "bob", "--home", home)
	g.Expect(err).To(MatchError(ContainSubstring("no password on the input stream")))
	_, err = runWithInput("\n", "registry", "htpasswd", "bob", "--home", home)
	g.Expect(err).To(MatchError(ContainSubstring("password on the input stream is empty")))
	_, err = runWithInput("pw\n", "registry", "htpasswd", "b:ob", "--home", home)
	g.Expect(err).To(MatchError(ContainSubstring("without ':'")))
	data2, err := os.ReadFile(file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Count(string(data2), "\n")).To(Equal(2), "refused users leave the file alone")
}
