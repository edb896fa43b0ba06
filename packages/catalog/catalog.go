package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
)

// Resolved is a Package's spec resolved in a bundle.
type Resolved struct {
	// Package is the bundle's package the spec names.
	Package *packagesv1.BundlePackage
	// Version is the version the spec resolves to.
	Version *packagesv1.PackageVersion
	// Values is spec.config decoded: the Helm values (never nil).
	Values map[string]any
}

// Resolve resolves spec in bundle. The errors name the field at fault.
func Resolve(bundle *packagesv1.PackageBundle, spec packagesv1.PackageSpec) (*Resolved, field.ErrorList) {
	specPath := field.NewPath("spec")
	p := bundle.Package(spec.PackageName)
	if p == nil {
		return nil, field.ErrorList{field.NotFound(specPath.Child("packageName"),
			fmt.Sprintf("%s (bundle %s has: %s)", spec.PackageName, bundle.Name, strings.Join(packageNames(bundle), ", ")))}
	}
	v := p.Version(spec.PackageVersion)
	if v == nil {
		if spec.PackageVersion == "" {
			return nil, field.ErrorList{field.Required(specPath.Child("packageVersion"),
				fmt.Sprintf("package %s of bundle %s lists no version", p.Name, bundle.Name))}
		}
		return nil, field.ErrorList{field.NotFound(specPath.Child("packageVersion"),
			fmt.Sprintf("%s (package %s of bundle %s has: %s)", spec.PackageVersion, p.Name, bundle.Name, strings.Join(versions(p), ", ")))}
	}
	values, errs := ValidateConfig(v.Schema, spec.Config, specPath.Child("config"))
	if len(errs) > 0 {
		return nil, errs
	}
	return &Resolved{Package: p, Version: v, Values: values}, nil
}

// Dependencies returns the packages that the version spec names in bundle depends on: what
// Resolve's Version lists, without decoding the config. Nil when spec names no version of bundle.
func Dependencies(bundle *packagesv1.PackageBundle, spec packagesv1.PackageSpec) []string {
	p := bundle.Package(spec.PackageName)
	if p == nil {
		return nil
	}
	if v := p.Version(spec.PackageVersion); v != nil {
		return v.Dependencies
	}
	return nil
}

// ValidateConfig decodes config (YAML; empty is {}) and validates it against schema (a JSON
// Schema as JSON; empty accepts anything). It returns the decoded values, or errors whose paths
// start at path and name the offending value, e.g. spec.config.service.port.
func ValidateConfig(schema, config string, path *field.Path) (map[string]any, field.ErrorList) {
	values := map[string]any{}
	if strings.TrimSpace(config) != "" {
		if err := yaml.Unmarshal([]byte(config), &values); err != nil {
			return nil, field.ErrorList{field.Invalid(path, "<yaml>", fmt.Sprintf("not a YAML mapping: %v", err))}
		}
		if values == nil {
			values = map[string]any{}
		}
	}
	if strings.TrimSpace(schema) == "" {
		return values, nil
	}
	compiled, err := compile(schema)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(path, fmt.Errorf("the package's schema does not compile: %w", err))}
	}
	// The validator wants the value as encoding/json decodes it (json.Number for numbers).
	raw, err := json.Marshal(values)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(path, "<yaml>", err.Error())}
	}
	instance, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, field.ErrorList{field.Invalid(path, "<yaml>", err.Error())}
	}
	err = compiled.Validate(instance)
	if err == nil {
		return values, nil
	}
	verr, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return nil, field.ErrorList{field.Invalid(path, "<yaml>", err.Error())}
	}
	return nil, schemaErrors(verr, path, instance)
}

func compile(schema string) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	const url = "package-schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// printer renders the validator's messages.
var printer = message.NewPrinter(language.English)

// schemaErrors flattens a validation error into one field error per failing value, each at
// the value's path under path.
func schemaErrors(verr *jsonschema.ValidationError, path *field.Path, instance any) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		p, value := valuePath(path, instance, e.InstanceLocation)
		msg := e.ErrorKind.LocalizedString(printer)
		key := p.String() + ": " + msg
		if seen[key] {
			return
		}
		seen[key] = true
		errs = append(errs, field.Invalid(p, shown(value), msg))
	}
	walk(verr)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return errs
}

// valuePath is the path of the value at tokens (a JSON pointer's) in instance: array items as
// indexes (hosts[1]), object members as children (service.port).
func valuePath(path *field.Path, instance any, tokens []string) (*field.Path, any) {
	p, v := path, instance
	for _, token := range tokens {
		switch cur := v.(type) {
		case []any:
			i, err := strconv.Atoi(token)
			if err != nil || i < 0 || i >= len(cur) {
				return p.Child(token), nil
			}
			p, v = p.Index(i), cur[i]
		case map[string]any:
			p, v = p.Child(token), cur[token]
		default:
			p, v = p.Child(token), nil
		}
	}
	return p, v
}

// shown is a value as an error shows it: scalars as they are, objects and arrays left out.
func shown(v any) any {
	switch v := v.(type) {
	case string, bool, json.Number, float64, int64, nil:
		if n, ok := v.(json.Number); ok {
			return n.String()
		}
		return v
	default:
		return field.OmitValueType{}
	}
}

func packageNames(b *packagesv1.PackageBundle) []string {
	names := make([]string, 0, len(b.Spec.Packages))
	for _, p := range b.Spec.Packages {
		names = append(names, p.Name)
	}
	return names
}

func versions(p *packagesv1.BundlePackage) []string {
	vs := make([]string, 0, len(p.Versions))
	for _, v := range p.Versions {
		vs = append(vs, v.Version)
	}
	return vs
}

// Newer returns the versions of p listed before current (the list is newest first); all of
// them when current is not listed, none when current is empty.
func Newer(p *packagesv1.BundlePackage, current string) []string {
	if current == "" {
		return nil
	}
	var out []string
	for _, v := range p.Versions {
		if v.Version == current {
			return out
		}
		out = append(out, v.Version)
	}
	return out
}
