package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// MergeValues merges YAML values files in order, then Helm --set expressions, into one YAML
// document: a Package's spec.config. No input gives "".
func MergeValues(files [][]byte, set []string) (string, error) {
	values := map[string]any{}
	for i, data := range files {
		current := map[string]any{}
		if err := yaml.Unmarshal(data, &current); err != nil {
			return "", fmt.Errorf("values file %d is not a YAML mapping: %w", i+1, err)
		}
		mergeMaps(values, current)
	}
	for _, s := range set {
		if err := strvals.ParseInto(s, values); err != nil {
			return "", fmt.Errorf("--set %s: %w", s, err)
		}
	}
	if len(values) == 0 {
		return "", nil
	}
	out, err := yaml.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("encoding the package config: %w", err)
	}
	return string(out), nil
}

// mergeMaps merges src into dst, recursively for nested maps; src wins.
func mergeMaps(dst, src map[string]any) {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				mergeMaps(dv, sv)
				continue
			}
		}
		dst[k] = v
	}
}

// PackageManifest is a Package manifest for package pkg of bundle b on cluster, named name
// (pkg when empty). Its spec.config lists the config's properties from the version's JSON
// Schema as comments, each with its type, description and default, ready to uncomment.
func PackageManifest(b *packagesv1.PackageBundle, cluster, pkg, name string) ([]byte, error) {
	p := b.Package(pkg)
	if p == nil {
		var names []string
		for _, bp := range b.Spec.Packages {
			names = append(names, bp.Name)
		}
		return nil, fmt.Errorf("bundle %s has no package %s; it has: %s", b.Name, pkg, strings.Join(names, ", "))
	}
	v := p.Version("")
	if v == nil {
		return nil, fmt.Errorf("package %s of bundle %s has no version", pkg, b.Name)
	}
	if name == "" {
		name = pkg
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "# %s %s from bundle %s", p.Name, v.Version, b.Name)
	if p.Description != "" {
		fmt.Fprintf(&out, ": %s", p.Description)
	}
	fmt.Fprintf(&out, "\n# Install with: kubectl apply -f FILE, or flotilla install package %s --cluster %s -f values.yaml\n", pkg, cluster)
	fmt.Fprintf(&out, "apiVersion: %s\nkind: Package\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  packageName: %s\n",
		packagesv1.GroupVersion, name, packagesv1.ClusterNamespace(cluster), p.Name)
	fmt.Fprintf(&out, "  # packageVersion: %s   # default: the active bundle's; pin to stay on a version\n", v.Version)
	fmt.Fprintf(&out, "  targetNamespace: %s\n", packagesv1.DefaultTargetNamespace)
	lines := configComments(v.Schema)
	if len(lines) == 0 {
		out.WriteString("  config: \"\"\n")
		return out.Bytes(), nil
	}
	out.WriteString("  config: |\n")
	for _, l := range lines {
		out.WriteString("    " + l + "\n")
	}
	return out.Bytes(), nil
}

// jsonSchema is the part of a JSON Schema PackageManifest reads.
type jsonSchema struct {
	Type        any                    `json:"type"`
	Description string                 `json:"description"`
	Default     any                    `json:"default"`
	Enum        []any                  `json:"enum"`
	Properties  map[string]*jsonSchema `json:"properties"`
	Required    []string               `json:"required"`
}

// configComments renders the schema's properties as commented YAML, nested objects indented.
func configComments(schema string) []string {
	if strings.TrimSpace(schema) == "" {
		return nil
	}
	s := &jsonSchema{}
	if err := json.Unmarshal([]byte(schema), s); err != nil {
		return []string{"# (the package's schema does not parse: " + err.Error() + ")"}
	}
	return propertyComments(s, "")
}

func propertyComments(s *jsonSchema, indent string) []string {
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	var lines []string
	for _, n := range names {
		p := s.Properties[n]
		if p == nil {
			continue
		}
		info := fmt.Sprint(p.Type)
		if p.Type == nil {
			info = "any"
		}
		for _, r := range s.Required {
			if r == n {
				info += ", required"
			}
		}
		if len(p.Enum) > 0 {
			info += fmt.Sprintf(", one of %v", p.Enum)
		}
		if p.Description != "" {
			info += ": " + p.Description
		}
		lines = append(lines, indent+"# "+n+" ("+info+")")
		switch {
		case len(p.Properties) > 0:
			lines = append(lines, indent+"# "+n+":")
			lines = append(lines, propertyComments(p, indent+"  ")...)
		case p.Default != nil:
			d, _ := json.Marshal(p.Default)
			lines = append(lines, indent+"# "+n+": "+string(d))
		default:
			lines = append(lines, indent+"# "+n+":")
		}
	}
	return lines
}
