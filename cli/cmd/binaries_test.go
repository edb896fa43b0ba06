package cmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

func TestBinariesList(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	built := filepath.Join(root, "v1.36.3")
	g.Expect(os.MkdirAll(built, 0o755)).To(Succeed())
	for _, name := range binaries.Names {
		g.Expect(os.WriteFile(filepath.Join(built, name), []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	}

	t.Run("a table says which versions are built and how to build the others", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run("binaries", "list", "--bin-dir", root)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out).To(MatchRegexp(`VERSION +MINOR +STATUS +NODES +DIRECTORY\n`))
		g.Expect(out).To(MatchRegexp(`v1.36.3 +1.36 +built +not built \(--nodes\) +` + built + `\n`))
		g.Expect(out).To(ContainSubstring("v1.35.4   1.35    missing etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok; run: flotilla binaries build v1.35.4 --bin-dir " + root))
	})
	t.Run("-o json lists the missing programs", func(t *testing.T) {
		g := NewWithT(t)
		out, _, err := run("binaries", "list", "--bin-dir", root, "-o", "json")
		g.Expect(err).NotTo(HaveOccurred())
		var listings []client.BinariesStatus
		g.Expect(json.Unmarshal([]byte(out), &listings)).To(Succeed())
		g.Expect(listings).To(HaveLen(2))
		g.Expect(listings[0]).To(Equal(client.BinariesStatus{Version: "v1.36.3", Minor: "1.36", Ready: true, Dir: built,
			MissingNodes: append(append([]string(nil), binaries.NodeNames...), binaries.ImageNames...)}))
		g.Expect(listings[1].Ready).To(BeFalse())
		g.Expect(listings[1].Missing).To(ConsistOf(binaries.Names))
		g.Expect(listings[1].BuildCommand).To(Equal("flotilla binaries build v1.35.4 --bin-dir " + root))
	})
}

func TestBinariesBuildRefusesBadArguments(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no version", args: nil, wantErr: "name the Kubernetes versions to build (1.36, 1.35), or --all"},
		{name: "versions and --all", args: []string{"1.35", "--all"}, wantErr: "give versions or --all, not both"},
		{name: "an unsupported version", args: []string{"1.30"}, wantErr: `kubernetes version "1.30" is not supported: supported minor versions are 1.36, 1.35`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			_, _, err := run(append([]string{"binaries", "build", "--bin-dir", root}, tt.args...)...)
			g.Expect(err).To(MatchError(tt.wantErr))
			entries, err := os.ReadDir(root)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(entries).To(BeEmpty(), "nothing is built")
		})
	}
}
