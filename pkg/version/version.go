package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Values stamped by -ldflags "-X ...". They are variables only because the linker can set
// nothing else; read them through Get.
var (
	gitVersion   = ""
	gitCommit    = ""
	gitTreeState = ""
	buildDate    = ""
)

// DevelVersion is reported when neither the linker nor the Go build information names a version.
const DevelVersion = "v0.0.0-dev"

// Info describes one build of Flotilla.
type Info struct {
	// Version is the release version, such as v0.1.0, or a Go pseudo-version.
	Version string `json:"version"`
	// GitCommit is the commit the binary was built from, when known.
	GitCommit string `json:"gitCommit,omitempty"`
	// GitTreeState is "dirty" when the working tree had uncommitted changes, "clean" when it
	// had none, and empty when unknown.
	GitTreeState string `json:"gitTreeState,omitempty"`
	// BuildDate is when the binary was built (or when its commit was made, for builds that only
	// carry VCS information), in RFC 3339, when known.
	BuildDate string `json:"buildDate,omitempty"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"goVersion"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
}

// Get returns the version information of the running binary.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(stamp{version: gitVersion, commit: gitCommit, treeState: gitTreeState, date: buildDate}, bi)
}

// String is the one-line form, such as
// "v0.1.0 (commit 1a2b3c4d5e6f, built 2026-05-01T10:00:00Z, go1.26.8 linux/amd64)".
func (i Info) String() string {
	details := make([]string, 0, 4)
	if i.GitCommit != "" {
		commit := i.GitCommit
		if len(commit) > 12 {
			commit = commit[:12]
		}
		if i.GitTreeState == "dirty" {
			commit += "-dirty"
		}
		details = append(details, "commit "+commit)
	}
	if i.BuildDate != "" {
		details = append(details, "built "+i.BuildDate)
	}
	details = append(details, i.GoVersion+" "+i.Platform)
	return fmt.Sprintf("%s (%s)", i.Version, strings.Join(details, ", "))
}

// stamp holds what the linker set.
type stamp struct {
	version, commit, treeState, date string
}

// resolve prefers what the linker stamped and falls back to the Go build information.
func resolve(s stamp, bi *debug.BuildInfo) Info {
	info := Info{
		Version:      s.version,
		GitCommit:    s.commit,
		GitTreeState: s.treeState,
		BuildDate:    s.date,
		GoVersion:    runtime.Version(),
		Platform:     runtime.GOOS + "/" + runtime.GOARCH,
	}
	if bi != nil {
		if bi.GoVersion != "" {
			info.GoVersion = bi.GoVersion
		}
		if info.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			info.Version = bi.Main.Version
		}
		for _, setting := range bi.Settings {
			switch setting.Key {
			case "vcs.revision":
				if info.GitCommit == "" {
					info.GitCommit = setting.Value
				}
			case "vcs.time":
				if info.BuildDate == "" {
					info.BuildDate = setting.Value
				}
			case "vcs.modified":
				// Only meaningful for the commit the build information itself reports.
				if s.commit == "" && s.treeState == "" {
					info.GitTreeState = treeState(setting.Value)
				}
			}
		}
	}
	if info.Version == "" {
		info.Version = DevelVersion
	}
	return info
}

func treeState(modified string) string {
	if modified == "true" {
		return "dirty"
	}
	return "clean"
}
