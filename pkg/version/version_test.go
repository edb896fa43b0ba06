package version

import (
	"runtime/debug"
	"testing"

	. "github.com/onsi/gomega"
)

func TestResolve(t *testing.T) {
	vcs := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/flotilla-dev/flotilla", Version: "(devel)"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.time", Value: "2026-05-01T10:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tests := []struct {
		name  string
		stamp stamp
		bi    *debug.BuildInfo
		want  Info
	}{
		{
			name:  "what the linker stamped wins over the build information",
			stamp: stamp{version: "v0.1.0", commit: "abc", treeState: "clean", date: "2026-06-01T00:00:00Z"},
			bi:    vcs,
			want:  Info{Version: "v0.1.0", GitCommit: "abc", GitTreeState: "clean", BuildDate: "2026-06-01T00:00:00Z", GoVersion: "go1.26.8"},
		},
		{
			name: "an unstamped checkout build reports its VCS revision and a development version",
			bi:   vcs,
			want: Info{Version: DevelVersion, GitCommit: "0123456789abcdef0123", GitTreeState: "dirty", BuildDate: "2026-05-01T10:00:00Z", GoVersion: "go1.26.8"},
		},
		{
			name: "a go install build reports its module version",
			bi:   &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.2.0"}},
			want: Info{Version: "v0.2.0", GoVersion: "go1.26.8"},
		},
		{
			name: "a binary without build information is a development build",
			want: Info{Version: DevelVersion},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := resolve(tt.stamp, tt.bi)
			g.Expect(got.Platform).NotTo(BeEmpty())
			g.Expect(got.GoVersion).NotTo(BeEmpty())
			got.Platform = ""
			if tt.want.GoVersion == "" {
				got.GoVersion = ""
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestInfoString(t *testing.T) {
	g := NewWithT(t)
	info := Info{Version: "v0.1.0", GitCommit: "0123456789abcdef", GitTreeState: "dirty", BuildDate: "2026-05-01T10:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"}
	g.Expect(info.String()).To(Equal("v0.1.0 (commit 0123456789ab-dirty, built 2026-05-01T10:00:00Z, go1.26.8 linux/amd64)"))
	g.Expect(Info{Version: DevelVersion, GoVersion: "go1.26.8", Platform: "linux/amd64"}.String()).To(Equal("v0.0.0-dev (go1.26.8 linux/amd64)"))
}
