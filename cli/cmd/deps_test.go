package cmd

import (
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// module is Flotilla's Go module path.
const module = "github.com/flotilla-dev/flotilla"

// controllerPackages are the packages that wire controllers into a manager: the manager and the
// component packages it sets up. Reconcilers and webhooks are recognised by their path.
var controllerPackages = []string{"manager", "addons", "cluster", "packages", "infrastructure/local", "infrastructure/packet"}

// isController reports whether pkg, a package of this module (path relative to it), is a
// reconciler, a webhook or one of controllerPackages.
func isController(pkg string) bool {
	parts := strings.Split(pkg, "/")
	return slices.Contains(parts, "reconcilers") || slices.Contains(parts, "webhooks") || slices.Contains(controllerPackages, pkg)
}

// TestTheCLILinksNoController keeps the CLI apart from the controllers: nothing under cli/
// links, directly or through another package, a reconciler, a webhook or the manager. What both
// sides need lives in packages both import (addons/desired, pkg/version, the api
// packages...). The binary's `flotilla manager` command, which does run the manager, is in
// cmd/flotilla.
func TestTheCLILinksNoController(t *testing.T) {
	g := NewWithT(t)
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH, so the CLI's dependencies cannot be listed")
	}
	out, err := exec.Command(goTool, "list", "-deps", module+"/cli/...").Output() //nolint:gosec // go list of this module's own packages
	g.Expect(err).NotTo(HaveOccurred(), "go list: %s", exitStderr(err))
	var linked []string
	for _, dep := range strings.Fields(string(out)) {
		if rel, ok := strings.CutPrefix(dep, module+"/"); ok && isController(rel) {
			linked = append(linked, dep)
		}
	}
	g.Expect(linked).To(BeEmpty(), "cli/... links controllers; move what it needs into a package both sides import")
}

func TestIsController(t *testing.T) {
	g := NewWithT(t)
	for _, pkg := range []string{"manager", "addons", "addons/reconcilers/helmchartproxy", "cluster/webhooks", "packages/reconcilers/package", "infrastructure/packet"} {
		g.Expect(isController(pkg)).To(BeTrue(), pkg)
	}
	for _, pkg := range []string{"pkg/scheme", "addons/desired", "addons/values", "cluster/gitops", "packages/bundle", "infrastructure/packet/metalsim", path.Join("cli", "client")} {
		g.Expect(isController(pkg)).To(BeFalse(), pkg)
	}
}

// exitStderr is what a failed command wrote to its error stream.
func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
