package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// run runs the flotilla binary's command tree in-process with args.
func run(args ...string) (stdout string, err error) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	root := newRootCmd(streams)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), err
}

func TestTheBinaryHasTheCLIAndTheManager(t *testing.T) {
	g := NewWithT(t)
	out, err := run("--help")
	g.Expect(err).NotTo(HaveOccurred())
	for _, want := range []string{"create", "get", "manager", "version"} {
		g.Expect(out).To(ContainSubstring("  " + want + " "))
	}
}

func TestTheManagerChecksItsFlagsBeforeItStarts(t *testing.T) {
	g := NewWithT(t)
	kubeconfig := filepath.Join(t.TempDir(), "mgmt.kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600)).To(Succeed())

	_, err := run("manager", "--kubeconfig", kubeconfig, "--webhook-port", "70000")
	g.Expect(err).To(MatchError("--webhook-port 70000 is not a port number (0-65535)"))
	_, err = run("manager", "--kubeconfig", filepath.Join(t.TempDir(), "missing"))
	g.Expect(err).To(MatchError(ContainSubstring("pass --kubeconfig with the management cluster's kubeconfig")))
}
