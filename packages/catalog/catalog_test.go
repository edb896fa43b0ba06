package catalog_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/packages/catalog"
)

const schema = `{"type": "object", "additionalProperties": false,
  "properties": {
    "greeting": {"type": "string"},
    "service": {"type": "object", "properties": {"port": {"type": "integer", "maximum": 65535}}},
    "hosts": {"type": "array", "items": {"type": "string"}}}}`

var bundle = &packagesv1.PackageBundle{
	ObjectMeta: metav1.ObjectMeta{Name: "v1-36-1"},
	Spec: packagesv1.PackageBundleSpec{Packages: []packagesv1.BundlePackage{{
		Name:     "hello",
		Versions: []packagesv1.PackageVersion{{Version: "0.2.0", Schema: schema}, {Version: "0.1.0"}},
	}}},
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name        string
		spec        packagesv1.PackageSpec
		wantVersion string
		wantField   string
		wantDetail  string
	}{
		{name: "no version resolves to the first, the default", spec: packagesv1.PackageSpec{PackageName: "hello"}, wantVersion: "0.2.0"},
		{name: "a pinned version resolves to itself", spec: packagesv1.PackageSpec{PackageName: "hello", PackageVersion: "0.1.0", Config: "anything: goes"}, wantVersion: "0.1.0"},
		{name: "a config that fits the schema resolves", spec: packagesv1.PackageSpec{PackageName: "hello", Config: "service:\n  port: 8080\nhosts: [a, b]\n"}, wantVersion: "0.2.0"},
		{name: "an unknown package names spec.packageName and the packages there are", spec: packagesv1.PackageSpec{PackageName: "nope"},
			wantField: "spec.packageName", wantDetail: "bundle v1-36-1 has: hello"},
		{name: "an unknown version names spec.packageVersion and the versions there are", spec: packagesv1.PackageSpec{PackageName: "hello", PackageVersion: "9.0.0"},
			wantField: "spec.packageVersion", wantDetail: "has: 0.2.0, 0.1.0"},
		{name: "a nested value of the wrong type names its path", spec: packagesv1.PackageSpec{PackageName: "hello", Config: "service:\n  port: http\n"},
			wantField: "spec.config.service.port"},
		{name: "a value above the maximum names its path", spec: packagesv1.PackageSpec{PackageName: "hello", Config: "service:\n  port: 70000\n"},
			wantField: "spec.config.service.port"},
		{name: "an array item of the wrong type names its index", spec: packagesv1.PackageSpec{PackageName: "hello", Config: "hosts: [a, 3]\n"},
			wantField: "spec.config.hosts[1]"},
		{name: "a property the schema does not allow names the object", spec: packagesv1.PackageSpec{PackageName: "hello", Config: "colour: red\n"},
			wantField: "spec.config", wantDetail: "colour"},
		{name: "a config that is not a YAML mapping names spec.config", spec: packagesv1.PackageSpec{PackageName: "hello", Config: "- a\n- b\n"},
			wantField: "spec.config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res, errs := catalog.Resolve(bundle, tt.spec)
			if tt.wantField == "" {
				g.Expect(errs).To(BeEmpty())
				g.Expect(res.Version.Version).To(Equal(tt.wantVersion))
				return
			}
			g.Expect(errs).NotTo(BeEmpty())
			fields := []string{}
			for _, e := range errs {
				fields = append(fields, e.Field)
			}
			g.Expect(fields).To(ContainElement(tt.wantField))
			g.Expect(errs.ToAggregate().Error()).To(ContainSubstring(tt.wantDetail))
		})
	}
}

func TestValidateConfigReturnsTheValues(t *testing.T) {
	g := NewWithT(t)
	values, errs := catalog.ValidateConfig(schema, "greeting: hi\n", field.NewPath("spec", "config"))
	g.Expect(errs).To(BeEmpty())
	g.Expect(values).To(Equal(map[string]any{"greeting": "hi"}))
	values, errs = catalog.ValidateConfig("", "", field.NewPath("spec", "config"))
	g.Expect(errs).To(BeEmpty())
	g.Expect(values).To(BeEmpty())
}

func TestNewerListsTheVersionsBeforeTheCurrentOne(t *testing.T) {
	g := NewWithT(t)
	p := &packagesv1.BundlePackage{Versions: []packagesv1.PackageVersion{{Version: "3"}, {Version: "2"}, {Version: "1"}}}
	g.Expect(catalog.Newer(p, "2")).To(Equal([]string{"3"}))
	g.Expect(catalog.Newer(p, "3")).To(BeEmpty())
	g.Expect(catalog.Newer(p, "")).To(BeEmpty())
}

func TestDependenciesAreThoseOfTheVersionTheSpecNames(t *testing.T) {
	g := NewWithT(t)
	b := &packagesv1.PackageBundle{Spec: packagesv1.PackageBundleSpec{Packages: []packagesv1.BundlePackage{{
		Name: "stack",
		Versions: []packagesv1.PackageVersion{
			{Version: "0.2.0", Dependencies: []string{"hello", "db"}},
			{Version: "0.1.0", Dependencies: []string{"hello"}},
		},
	}}}}
	g.Expect(catalog.Dependencies(b, packagesv1.PackageSpec{PackageName: "stack"})).To(Equal([]string{"hello", "db"}), "the default version")
	g.Expect(catalog.Dependencies(b, packagesv1.PackageSpec{PackageName: "stack", PackageVersion: "0.1.0"})).To(Equal([]string{"hello"}))
	g.Expect(catalog.Dependencies(b, packagesv1.PackageSpec{PackageName: "stack", PackageVersion: "9.9.9"})).To(BeEmpty())
	g.Expect(catalog.Dependencies(b, packagesv1.PackageSpec{PackageName: "nope"})).To(BeEmpty())
}
