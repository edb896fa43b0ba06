package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
)

// covers reports whether the package pattern p ("./x" or "./x/...") holds the package in dir
// (relative to the module root, with forward slashes).
func covers(p, dir string) bool {
	if rest, ok := strings.CutSuffix(p, "/..."); ok {
		rest = strings.TrimPrefix(rest, "./")
		return dir == rest || strings.HasPrefix(dir, rest+"/")
	}
	return strings.TrimPrefix(p, "./") == dir
}

// TestEveryPackageWithRBACMarkersBelongsToExactlyOneIdentity: a package whose markers no identity
// reads would lose its rules (and its component would be refused at run time); one read by two
// identities would give a rule to an identity that does not run it.
func TestEveryPackageWithRBACMarkersBelongsToExactlyOneIdentity(t *testing.T) {
	root := filepath.Join("..", "..")
	marked := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (rel == "hack" || rel == "test" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path) //nolint:gosec // a file of this module
		if err != nil {
			return err
		}
		if strings.Contains(string(data), "+kubebuilder:rbac:") {
			marked[filepath.ToSlash(filepath.Dir(rel))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(marked) == 0 {
		t.Fatal("found no package with RBAC markers")
	}
	for dir := range marked {
		var owners []string
		for _, id := range identities {
			for _, p := range id.packages {
				if covers(p, dir) {
					owners = append(owners, id.name)
					break
				}
			}
		}
		if len(owners) != 1 {
			t.Errorf("package ./%s has RBAC markers and belongs to identities %v: add it to exactly one in main.go", dir, owners)
		}
	}
}

// clusterRule is a rule of the ClusterRole of identity x.
func clusterRule(groups, resources, verbs []string) roleRule {
	return roleRule{role: "flotilla-x", PolicyRule: rbacv1.PolicyRule{APIGroups: groups, Resources: resources, Verbs: verbs}}
}

func TestJustifyAll(t *testing.T) {
	core, get := []string{""}, []string{"get"}
	reason := "the Widget reconciler reads them"
	tests := []struct {
		name  string
		rules []roleRule
		justs []justification
		// wantErrs are in the error, each naming what is wrong and where to fix it.
		wantErrs []string
	}{{
		name:  "a rule justified resource by resource is justified",
		rules: []roleRule{clusterRule(core, []string{"secrets", "configmaps"}, get)},
		justs: []justification{
			{APIGroups: core, Resources: []string{"secrets"}, Verbs: get, Reason: reason},
			{APIGroups: core, Resources: []string{"configmaps"}, Verbs: get, Reason: reason},
		},
	}, {
		name:  "a generated rule with a resource no justification covers fails, naming identity, group, resource, verbs and the file",
		rules: []roleRule{clusterRule(core, []string{"secrets", "configmaps"}, []string{"get", "list"})},
		justs: []justification{{APIGroups: core, Resources: []string{"secrets"}, Verbs: []string{"list", "get"}, Reason: reason}},
		wantErrs: []string{`identity x, ClusterRole flotilla-x (cluster-wide): apiGroup "", resource configmaps, verbs [get list]: no justification; add one to hack/rbacgen/justifications.yaml`},
	}, {
		name:     "a justification of the ClusterRole does not justify the same rule in a Role",
		rules:    []roleRule{{role: "flotilla-x", namespace: "flotilla-system", PolicyRule: rbacv1.PolicyRule{APIGroups: core, Resources: []string{"secrets"}, Verbs: get}}},
		justs:    []justification{{APIGroups: core, Resources: []string{"secrets"}, Verbs: get, Reason: reason}},
		wantErrs: []string{`Role flotilla-x in namespace flotilla-system: apiGroup "", resource secrets, verbs [get]: no justification`, `ClusterRole flotilla-x (cluster-wide): apiGroup "", resource secrets is justified in hack/rbacgen/justifications.yaml but no generated rule grants it (stale)`},
	}, {
		name:     "a justification without the rule's resource names does not justify it",
		rules:    []roleRule{{role: "flotilla-x", PolicyRule: rbacv1.PolicyRule{APIGroups: core, Resources: []string{"secrets"}, ResourceNames: []string{"a"}, Verbs: get}}},
		justs:    []justification{{APIGroups: core, Resources: []string{"secrets"}, Verbs: get, Reason: reason}},
		wantErrs: []string{`resource secrets, resourceNames a, verbs [get]: no justification`, `resource secrets is justified in hack/rbacgen/justifications.yaml but no generated rule grants it (stale)`},
	}, {
		name:  "a justification that matches no rule is stale",
		rules: []roleRule{clusterRule(core, []string{"secrets"}, get)},
		justs: []justification{
			{APIGroups: core, Resources: []string{"secrets"}, Verbs: get, Reason: reason},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: get, Reason: reason},
		},
		wantErrs: []string{`identity x, ClusterRole flotilla-x (cluster-wide): apiGroup "apps", resource deployments is justified in hack/rbacgen/justifications.yaml but no generated rule grants it (stale): remove the justification`},
	}, {
		name:     "a justification of several resources is stale for the one no rule grants",
		rules:    []roleRule{clusterRule(core, []string{"secrets"}, get)},
		justs:    []justification{{APIGroups: core, Resources: []string{"secrets", "configmaps"}, Verbs: get, Reason: reason}},
		wantErrs: []string{`apiGroup "", resource configmaps is justified in hack/rbacgen/justifications.yaml but no generated rule grants it (stale)`},
	}, {
		name:     "a rule whose verbs changed fails until its justification names them",
		rules:    []roleRule{clusterRule(core, []string{"secrets"}, []string{"get", "list", "watch"})},
		justs:    []justification{{APIGroups: core, Resources: []string{"secrets"}, Verbs: get, Reason: reason}},
		wantErrs: []string{`apiGroup "", resource secrets: the generated verbs are [get list watch] but hack/rbacgen/justifications.yaml justifies [get]; check the reason still holds`},
	}, {
		name:  "two justifications of one grant fail",
		rules: []roleRule{clusterRule(core, []string{"secrets"}, get)},
		justs: []justification{
			{APIGroups: core, Resources: []string{"secrets"}, Verbs: get, Reason: reason},
			{APIGroups: core, Resources: []string{"secrets", "configmaps"}, Verbs: get, Reason: reason},
		},
		wantErrs: []string{`apiGroup "", resource secrets is justified twice in hack/rbacgen/justifications.yaml`, `resource configmaps is justified in hack/rbacgen/justifications.yaml but no generated rule grants it (stale)`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := justifyAll([]string{"x"}, map[string][]roleRule{"x": tt.rules}, []identityRules{{Identity: "x", Rules: tt.justs}})
			if len(tt.wantErrs) == 0 {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			for _, want := range tt.wantErrs {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
		})
	}
}

func TestTheDocListsEveryRuleWithItsScopeAndReason(t *testing.T) {
	g := NewWithT(t)
	rules := []roleRule{
		clusterRule([]string{"", "events.k8s.io"}, []string{"events"}, []string{"create", "patch"}),
		clusterRule([]string{"apps"}, []string{"deployments", "daemonsets"}, []string{"get"}),
		{role: "flotilla-x", namespace: "kube-public", PolicyRule: rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"v"}, Verbs: []string{"get"}}},
	}
	justs := []justification{
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}, Reason: "the reconcilers record events"},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}, Reason: "Deploy reads deployments"},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get"}, Reason: "Daemon reads daemonsets"},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"v"}, Verbs: []string{"get"}, Namespace: "kube-public", Reason: "Version reads v"},
	}
	justified, err := justifyAll([]string{"x"}, map[string][]roleRule{"x": rules}, []identityRules{{Identity: "x", Rules: justs}})
	g.Expect(err).NotTo(HaveOccurred())
	doc := string(renderDoc([]string{"x"}, justified))
	g.Expect(doc).To(HavePrefix("<!-- Generated by make generate"))
	g.Expect(doc).To(ContainSubstring("\n## x\n"))
	g.Expect(doc).To(ContainSubstring("| cluster-wide | `\"\"`, `events.k8s.io` | `events` | create, patch | the reconcilers record events |\n"))
	g.Expect(doc).To(ContainSubstring("| cluster-wide | `apps` | `deployments` | get | Deploy reads deployments |\n"))
	g.Expect(doc).To(ContainSubstring("| cluster-wide | `apps` | `daemonsets` | get | Daemon reads daemonsets |\n"))
	g.Expect(doc).To(ContainSubstring("| Role `flotilla-x` in `kube-public` | `\"\"` | `configmaps` named `v` | get | Version reads v |\n"))
}

func TestLoadJustificationsRefusesWhatTheDocCannotHold(t *testing.T) {
	for name, tt := range map[string]struct{ yaml, want string }{
		"an empty reason":  {`[{identity: x, rules: [{apiGroups: [""], resources: [secrets], verbs: [get], reason: " "}]}]`, "identity x, rule 1 (resources [secrets]): reason is empty"},
		"a '|' in reasons": {`[{identity: x, rules: [{apiGroups: [""], resources: [secrets], verbs: [get], reason: "a | b"}]}]`, "may not hold '|'"},
		"no verbs":         {`[{identity: x, rules: [{apiGroups: [""], resources: [secrets], reason: r}]}]`, "identity x, rule 1: apiGroups, resources and verbs are required"},
		"an unknown field": {`[{identity: x, rules: [{apiGroup: [""], resources: [secrets], verbs: [get], reason: r}]}]`, `unknown field "apiGroup"`},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := loadJustifications([]byte(tt.yaml))
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

// TestTheCommittedRolesAreJustifiedAndTheDocIsCurrent: every rule of config/rbac has a reason in
// justifications.yaml, and docs/rbac.md lists them as rbacgen would write it (make
// verify-generate checks the same after regenerating the roles).
func TestTheCommittedRolesAreJustifiedAndTheDocIsCurrent(t *testing.T) {
	g := NewWithT(t)
	doc, err := document(filepath.Join("..", "..", "config", "rbac"))
	g.Expect(err).NotTo(HaveOccurred())
	committed, err := os.ReadFile(filepath.Join("..", "..", "docs", "rbac.md"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(committed)).To(Equal(string(doc)), "docs/rbac.md is stale: run make generate")
}
