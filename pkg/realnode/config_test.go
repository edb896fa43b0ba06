package realnode

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// fakeHost makes a directory with an executable file for each of programs and makes it the
// whole PATH for the test.
func fakeHost(t *testing.T, programs ...string) {
	t.Helper()
	dir := t.TempDir()
	for _, p := range programs {
		if err := os.WriteFile(filepath.Join(dir, p), []byte("#!/bin/sh\n"), 0o755); err != nil { //nolint:gosec // an executable
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
}

func TestPrerequisitesNameTheDebianPackageOfWhatIsMissing(t *testing.T) {
	g := NewWithT(t)

	fakeHost(t, "iptables", "iptables-restore")
	err := Prerequisites()
	g.Expect(err).To(MatchError(ErrPrerequisite))
	g.Expect(err).To(MatchError(ContainSubstring("runc is not installed: install Debian's runc package (apt-get install runc, or make node-packages)")))

	fakeHost(t, "runc", "iptables")
	err = Prerequisites()
	g.Expect(err).To(MatchError(ContainSubstring("iptables-restore is not installed: install Debian's iptables package")))

	fakeHost(t, "runc", "iptables", "iptables-restore")
	err = Prerequisites()
	g.Expect(err).To(MatchError(ContainSubstring("nsenter is not installed: install Debian's util-linux package")))

	fakeHost(t, "runc", "iptables", "iptables-restore", "nsenter")
	err = Prerequisites()
	if os.Geteuid() == 0 {
		g.Expect(err).NotTo(HaveOccurred())
	} else {
		g.Expect(err).To(MatchError(ContainSubstring("which needs root")))
	}
}
