package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/flotilla-dev/flotilla/infrastructure/providers"
)

// identity is one identity of the manager and the packages whose RBAC markers make its roles.
type identity struct {
	// name is the identity's: a component's name, or "manager" (manager.ManagerIdentity).
	name string
	// packages are Go package patterns ("./addons/...", or import paths of the Cluster API
	// module).
	packages []string
}

// capiPackages returns import paths of packages of the Cluster API module.
func capiPackages(paths ...string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, "sigs.k8s.io/cluster-api/"+p)
	}
	return out
}

// identities are the manager's identities, in the order of manager.Components() after the
// manager's own: a provider's (one per provider of the registry, infrastructure/providers) is
// its folder's. A package with RBAC markers belongs to exactly one of them (main_test.go).
var identities = slices.Concat([]identity{
	{"manager", []string{"./manager"}},
	{"capi", append(capiPackages(
		"core/reconcilers/cluster",
		"core/reconcilers/machine",
		"core/reconcilers/machineset",
		"core/reconcilers/machinedeployment",
		"core/reconcilers/machinehealthcheck",
		"core/reconcilers/clusterclass",
		"core/reconcilers/topology/cluster",
		"core/reconcilers/topology/machinedeployment",
		"core/reconcilers/topology/machineset",
		"core/reconcilers/clusterresourceset",
		"core/reconcilers/clusterresourcesetbinding",
	), "./manager/capi")},
}, providerIdentities(), []identity{
	{"inmemory", []string{"./infrastructure/inmemory/..."}},
	{"cluster", []string{"./cluster", "./cluster/reconcilers/cluster/...", "./cluster/webhooks/...", "./cluster/validation/..."}},
	{"gitops", []string{"./cluster/reconcilers/gitops/...", "./cluster/gitops/..."}},
	{"kubeconfigaccess", []string{"./cluster/reconcilers/kubeconfigaccess/..."}},
	{"addons", []string{"./addons/..."}},
	{"packages", []string{"./packages/..."}},
	{"kubeadm", append(capiPackages(
		"bootstrap/kubeadm/reconcilers/kubeadmconfig",
		"controlplane/kubeadm/reconcilers/kubeadmcontrolplane",
	), "./manager/kubeadm")},
})

// providerIdentities are the identities of the providers of the registry, each made of the
// packages of its folder, infrastructure/<name>.
func providerIdentities() []identity {
	var out []identity
	for _, p := range providers.All() {
		out = append(out, identity{p.Name, []string{"./infrastructure/" + p.Name + "/..."}})
	}
	return out
}

// roleFile is the file controller-gen writes into an identity's directory.
const roleFile = "role.yaml"

func main() {
	controllerGen := flag.String("controller-gen", "", "path of the controller-gen binary")
	out := flag.String("out", "config/rbac", "directory that receives <identity>/role.yaml")
	doc := flag.String("doc", "docs/rbac.md", "file that receives the table of every rule and its reason")
	flag.Parse()
	if err := run(*controllerGen, *out, *doc); err != nil {
		fmt.Fprintf(os.Stderr, "rbacgen: %v\n", err)
		os.Exit(1)
	}
}

func run(controllerGen, out, docPath string) error {
	if controllerGen == "" {
		return errors.New("-controller-gen is required")
	}
	if err := removeStale(out); err != nil {
		return err
	}
	for _, id := range identities {
		dir := filepath.Join(out, id.name)
		args := []string{"rbac:roleName=flotilla-" + id.name}
		for _, p := range id.packages {
			args = append(args, "paths="+p)
		}
		args = append(args, "output:rbac:artifacts:config="+dir)
		cmd := exec.Command(controllerGen, args...) //nolint:gosec // the generator the Makefile names
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("generating the roles of identity %s: %w", id.name, err)
		}
	}
	doc, err := document(out)
	if err != nil {
		return err
	}
	if err := os.WriteFile(docPath, doc, 0o644); err != nil { //nolint:gosec // a doc, world-readable like the rest of the tree
		return fmt.Errorf("writing %s: %w", docPath, err)
	}
	return nil
}

// document justifies every rule of the roles in out (those of identities, then handWritten's)
// and returns the doc that lists them with their reasons.
func document(out string) ([]byte, error) {
	order := make([]string, 0, len(identities)+1)
	for _, id := range identities {
		order = append(order, id.name)
	}
	order = append(order, handWritten)
	roles := map[string][]roleRule{}
	for _, id := range order {
		rules, err := readRoles(out, id)
		if err != nil {
			return nil, err
		}
		roles[id] = rules
	}
	justs, err := loadJustifications(justificationsYAML)
	if err != nil {
		return nil, err
	}
	justified, err := justifyAll(order, roles, justs)
	if err != nil {
		return nil, fmt.Errorf("justifying the rules of the roles:\n%w", err)
	}
	return renderDoc(order, justified), nil
}

// removeStale removes the generated directories of identities no longer in the table: those
// holding role.yaml and nothing else. Hand-written manifests (rbac/cluster-creator) stay.
func removeStale(out string) error {
	entries, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("reading %s: %w", out, err)
	}
	for _, e := range entries {
		if !e.IsDir() || slices.ContainsFunc(identities, func(id identity) bool { return id.name == e.Name() }) {
			continue
		}
		dir := filepath.Join(out, e.Name())
		files, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("reading %s: %w", dir, err)
		}
		if len(files) == 1 && files[0].Name() == roleFile {
			if err := os.RemoveAll(dir); err != nil {
				return fmt.Errorf("removing the roles of a former identity: %w", err)
			}
		}
	}
	return nil
}
