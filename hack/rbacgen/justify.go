package main

import (
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/flotilla-dev/flotilla/config"
)

// justificationsFile is where every rule of the roles is justified, named in errors.
const justificationsFile = "hack/rbacgen/justifications.yaml"

//go:embed justifications.yaml
var justificationsYAML []byte

// handWritten is the directory of config/rbac whose roles are written by hand, not generated,
// and justified like the generated ones: the roles an admin binds to tenants.
const handWritten = "cluster-creator"

// identityRules are the justified rules of one identity (or of handWritten).
type identityRules struct {
	Identity string          `json:"identity"`
	Rules    []justification `json:"rules"`
}

// justification says why an identity holds a rule: the API groups, resources and resource names
// it covers (each pair of a group and a resource is a grant, see grantKey), the verbs the
// generated rule must have for them, and the reason.
type justification struct {
	APIGroups     []string `json:"apiGroups"`
	Resources     []string `json:"resources"`
	ResourceNames []string `json:"resourceNames,omitempty"`
	Verbs         []string `json:"verbs"`
	// Role is the name of the role that holds the rule; empty for the identity's own
	// (config.RoleName).
	Role string `json:"role,omitempty"`
	// Namespace is that of the Role that holds the rule; empty for the ClusterRole.
	Namespace string `json:"namespace,omitempty"`
	// Reason names the code that needs the rule and says why it needs these verbs.
	Reason string `json:"reason"`
}

// roleRule is a rule of a role of an identity, as generated (or written by hand).
type roleRule struct {
	role, namespace string
	rbacv1.PolicyRule
}

// scope says where a rule applies, for errors and the doc.
func (r roleRule) scope() string {
	if r.namespace == "" {
		return fmt.Sprintf("ClusterRole %s (cluster-wide)", r.role)
	}
	return fmt.Sprintf("Role %s in namespace %s", r.role, r.namespace)
}

// grantKey is what a justification is keyed by: one resource of one API group (with the
// resource names, if the rule has any), in one role of one identity.
type grantKey struct {
	identity, role, namespace, group, resource, names string
}

func (k grantKey) String() string {
	s := fmt.Sprintf("identity %s, %s: apiGroup %q, resource %s", k.identity, roleRule{role: k.role, namespace: k.namespace}.scope(), k.group, k.resource)
	if k.names != "" {
		s += ", resourceNames " + k.names
	}
	return s
}

// grantKeys are the keys of the grants of a rule of identity.
func grantKeys(identity, role, namespace string, rule rbacv1.PolicyRule) []grantKey {
	names := strings.Join(rule.ResourceNames, ",")
	keys := make([]grantKey, 0, len(rule.APIGroups)*len(rule.Resources))
	for _, g := range rule.APIGroups {
		for _, r := range rule.Resources {
			keys = append(keys, grantKey{identity, role, namespace, g, r, names})
		}
	}
	return keys
}

// loadJustifications strictly decodes the justifications and checks each has what the doc
// needs.
func loadJustifications(data []byte) ([]identityRules, error) {
	var ids []identityRules
	if err := yaml.UnmarshalStrict(data, &ids); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", justificationsFile, err)
	}
	for i := range ids {
		for j := range ids[i].Rules {
			just := &ids[i].Rules[j]
			just.Reason = strings.Join(strings.Fields(just.Reason), " ")
			switch {
			case just.Reason == "":
				return nil, fmt.Errorf("%s: identity %s, rule %d (resources %v): reason is empty", justificationsFile, ids[i].Identity, j+1, just.Resources)
			case strings.Contains(just.Reason, "|"):
				return nil, fmt.Errorf("%s: identity %s, rule %d (resources %v): the reason may not hold '|' (it goes into a Markdown table)", justificationsFile, ids[i].Identity, j+1, just.Resources)
			case len(just.APIGroups) == 0 || len(just.Resources) == 0 || len(just.Verbs) == 0:
				return nil, fmt.Errorf("%s: identity %s, rule %d: apiGroups, resources and verbs are required", justificationsFile, ids[i].Identity, j+1)
			}
		}
	}
	return ids, nil
}

// readRoles reads the rules of the roles in config/rbac/<dir> under out (ClusterRoles and
// Roles; the bindings of handWritten are not rules), in file order.
func readRoles(out, dir string) ([]roleRule, error) {
	objs, err := config.DecodeRBAC(os.DirFS(out), dir)
	if err != nil {
		return nil, fmt.Errorf("reading the roles of %s: %w", filepath.Join(out, dir), err)
	}
	var rules []roleRule
	for _, obj := range objs {
		var policy []rbacv1.PolicyRule
		switch role := obj.(type) {
		case *rbacv1.ClusterRole:
			policy = role.Rules
		case *rbacv1.Role:
			policy = role.Rules
		default:
			continue
		}
		for _, p := range policy {
			if len(p.NonResourceURLs) > 0 {
				return nil, fmt.Errorf("%s: role %s has a rule on nonResourceURLs %v, which rbacgen cannot justify", filepath.Join(out, dir), obj.GetName(), p.NonResourceURLs)
			}
			rules = append(rules, roleRule{role: obj.GetName(), namespace: obj.GetNamespace(), PolicyRule: p})
		}
	}
	return rules, nil
}

// justified pairs each rule of an identity with the justifications of its grants.
type justified struct {
	rule roleRule
	// parts split the rule by justification, in the order their grants first appear: each has
	// the groups and resources of the rule that one justification covers.
	parts []justifiedPart
}

type justifiedPart struct {
	apiGroups, resources []string
	reason               string
}

// indexEntry is a justification of one grant, and whether a rule grants it.
type indexEntry struct {
	just *justification
	used bool
}

// justifyAll pairs every rule of roles (by identity, in the order of order) with its
// justifications. It fails, naming every culprit, when a grant of a rule has no justification
// or one with other verbs, when two justifications cover one grant, and when a justification
// covers a grant of no rule (stale).
func justifyAll(order []string, roles map[string][]roleRule, justs []identityRules) (map[string][]justified, error) {
	index, errs := indexJustifications(justs)
	out := map[string][]justified{}
	for _, id := range order {
		for _, rule := range roles[id] {
			jr, ruleErrs := justifyRule(id, rule, index)
			errs = append(errs, ruleErrs...)
			out[id] = append(out[id], jr)
		}
	}
	var stale []string
	for k, e := range index {
		if !e.used {
			stale = append(stale, fmt.Sprintf("%s is justified in %s but no generated rule grants it (stale): remove the justification, or fix its key", k, justificationsFile))
		}
	}
	slices.Sort(stale)
	for _, s := range stale {
		errs = append(errs, errors.New(s))
	}
	return out, errors.Join(errs...)
}

// indexJustifications indexes the justifications by the grants they cover; a grant covered
// twice is an error.
func indexJustifications(justs []identityRules) (map[grantKey]*indexEntry, []error) {
	index := map[grantKey]*indexEntry{}
	var errs []error
	for i := range justs {
		id := justs[i].Identity
		for j := range justs[i].Rules {
			just := &justs[i].Rules[j]
			role := just.Role
			if role == "" {
				role = config.RoleName(id)
			}
			for _, k := range grantKeys(id, role, just.Namespace, rbacv1.PolicyRule{APIGroups: just.APIGroups, Resources: just.Resources, ResourceNames: just.ResourceNames}) {
				if index[k] != nil {
					errs = append(errs, fmt.Errorf("%s is justified twice in %s: keep one", k, justificationsFile))
					continue
				}
				index[k] = &indexEntry{just: just}
			}
		}
	}
	return index, errs
}

// justifyRule splits a rule of identity id by the justifications of its grants, marking them
// used; a grant without a justification, or whose justification names other verbs, is an
// error.
func justifyRule(id string, rule roleRule, index map[grantKey]*indexEntry) (justified, []error) {
	jr := justified{rule: rule}
	var errs []error
	byJust := map[*justification]int{}
	for _, k := range grantKeys(id, rule.role, rule.namespace, rule.PolicyRule) {
		e := index[k]
		if e == nil {
			errs = append(errs, fmt.Errorf("%s, verbs %v: no justification; add one to %s naming the code that needs it and why these verbs", k, rule.Verbs, justificationsFile))
			continue
		}
		if !sameSet(e.just.Verbs, rule.Verbs) {
			errs = append(errs, fmt.Errorf("%s: the generated verbs are %v but %s justifies %v; check the reason still holds and update its verbs", k, rule.Verbs, justificationsFile, e.just.Verbs))
		}
		e.used = true
		p, ok := byJust[e.just]
		if !ok {
			p = len(jr.parts)
			byJust[e.just] = p
			jr.parts = append(jr.parts, justifiedPart{reason: e.just.Reason})
		}
		part := &jr.parts[p]
		if !slices.Contains(part.apiGroups, k.group) {
			part.apiGroups = append(part.apiGroups, k.group)
		}
		if !slices.Contains(part.resources, k.resource) {
			part.resources = append(part.resources, k.resource)
		}
	}
	return jr, errs
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}
