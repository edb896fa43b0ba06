package binaries

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/kubeversion"
)

func TestResolveMinor(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr string
	}{
		{name: "a minor resolves to the newest supported patch", in: "1.36", want: "v1.36.3"},
		{name: "a v-prefixed minor resolves too", in: "v1.35", want: "v1.35.4"},
		{name: "a supported full version resolves to itself", in: "v1.36.3", want: "v1.36.3"},
		{name: "a supported full version with a suffix resolves to the version", in: "v1.35.4-dirty", want: "v1.35.4"},
		{name: "an unsupported minor lists the supported ones", in: "1.20", wantErr: "supported minor versions are 1.36, 1.35"},
		{name: "an unsupported patch of a supported minor is not supported", in: "v1.36.2", wantErr: `"v1.36.2" is not supported`},
		{name: "a word is not supported", in: "latest", wantErr: `"latest" is not supported`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ResolveMinor(tt.in)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestSupportedVersionsParse(t *testing.T) {
	g := NewWithT(t)
	for _, v := range Supported {
		parsed, err := kubeversion.Parse(v)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(parsed.HasPatch).To(BeTrue(), "%s is a full version", v)
	}
	g.Expect(SupportedMinors()).To(Equal([]string{"1.36", "1.35"}))
}

func TestDefaultRootHonoursTheEnvironment(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(RootEnv, "/somewhere/bin")
	g.Expect(DefaultRoot()).To(Equal("/somewhere/bin"))

	t.Setenv(RootEnv, "")
	t.Setenv("HOME", "/home/someone")
	g.Expect(DefaultRoot()).To(Equal("/home/someone/.cache/flotilla/bin"))
}

func TestFind(t *testing.T) {
	tests := []struct {
		name    string
		present map[string]os.FileMode
		wantErr []string
	}{
		{
			name:    "every program present and executable gives a set",
			present: map[string]os.FileMode{Etcd: 0o755, KubeAPIServer: 0o755, KubeControllerManager: 0o755, KubeScheduler: 0o755, Kwok: 0o755},
		},
		{
			name:    "a missing program is named with the build command",
			present: map[string]os.FileMode{Etcd: 0o755, KubeAPIServer: 0o755, KubeControllerManager: 0o755, KubeScheduler: 0o755},
			wantErr: []string{"kwok not found in", "run: flotilla binaries build v1.36.3 --bin-dir "},
		},
		{
			name:    "a program without the executable bit is reported",
			present: map[string]os.FileMode{Etcd: 0o644, KubeAPIServer: 0o755, KubeControllerManager: 0o755, KubeScheduler: 0o755, Kwok: 0o755},
			wantErr: []string{"etcd is not an executable file", "run: flotilla binaries build v1.36.3 --bin-dir "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			dir := filepath.Join(root, "v1.36.3")
			g.Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
			for name, mode := range tt.present {
				g.Expect(os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode)).To(Succeed())
			}

			set, err := Find(root, "v1.36.3")
			if tt.wantErr != nil {
				g.Expect(err).To(MatchError(ErrMissing))
				for _, want := range tt.wantErr {
					g.Expect(err.Error()).To(ContainSubstring(want))
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(set.Version).To(Equal("v1.36.3"))
			g.Expect(set.Path(KubeAPIServer)).To(Equal(filepath.Join(dir, "kube-apiserver")))
		})
	}
}

func TestBuildCommandNamesTheCacheUnlessItIsTheDefault(t *testing.T) {
	g := NewWithT(t)
	t.Setenv(RootEnv, "/cache/bin")
	g.Expect(Set{Dir: "/cache/bin/v1.35.4", Version: "v1.35.4"}.BuildCommand()).To(Equal("flotilla binaries build v1.35.4"))
	g.Expect(Set{Dir: "/elsewhere/v1.35.4", Version: "v1.35.4"}.BuildCommand()).To(Equal("flotilla binaries build v1.35.4 --bin-dir /elsewhere"))
}

func TestMissingListsEveryAbsentProgram(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, Etcd), []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, Kwok), []byte("#!/bin/sh\n"), 0o644)).To(Succeed())
	g.Expect(Set{Dir: dir}.Missing(Names...)).To(Equal([]string{KubeAPIServer, KubeControllerManager, KubeScheduler, Kwok}))
}
