package providers

import (
	"encoding/json"
	"testing"
	"text/template"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/pkg/scheme"
)

func TestEveryProviderIsComplete(t *testing.T) {
	s, err := scheme.New()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := template.New(p.Name).Parse(p.Template)
			g.Expect(err).NotTo(HaveOccurred(), "the generate clusterconfig template parses")
			for _, c := range []Config{p.DatacenterConfig, p.MachineConfig} {
				obj := c.New()
				gvk, err := apiutil.GVKForObject(obj, s)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(gvk).To(Equal(c.GroupVersionKind()), "New makes an object of the kind")
				g.Expect(c.Validate).NotTo(BeNil())
				if c.Default != nil {
					c.Default(obj)
				}
				for _, err := range c.Validate(obj) {
					g.Expect(err.Field).To(HavePrefix("spec."), "the rules' paths start at spec")
				}
			}
		})
	}
}

func TestNamesAndKindsAreUnique(t *testing.T) {
	g := NewWithT(t)
	names := map[string]bool{}
	kinds := map[string]string{}
	for _, p := range All() {
		g.Expect(names).NotTo(HaveKey(p.Name))
		names[p.Name] = true
		for _, kind := range []string{p.DatacenterConfig.Kind, p.MachineConfig.Kind} {
			g.Expect(kinds).NotTo(HaveKey(kind), "%s is also a kind of %s", kind, kinds[kind])
			kinds[kind] = p.Name
		}
	}
}

func TestLookups(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DatacenterKinds()).To(Equal([]string{"LocalDatacenterConfig", "PacketDatacenterConfig"}))
	g.Expect(MachineConfigKinds()).To(Equal([]string{"LocalMachineConfig", "PacketMachineConfig"}))
	for _, p := range All() {
		byName, ok := Named(p.Name)
		g.Expect(ok).To(BeTrue())
		g.Expect(byName.Name).To(Equal(p.Name))
		byKind, ok := OfDatacenterKind(p.DatacenterConfig.Kind)
		g.Expect(ok).To(BeTrue())
		g.Expect(byKind.Name).To(Equal(p.Name))
	}
	_, ok := Named("inmemory")
	g.Expect(ok).To(BeFalse(), "a ClusterClass's provider is not Flotilla's")
	_, ok = OfDatacenterKind("LocalMachineConfig")
	g.Expect(ok).To(BeFalse(), "a machine config is no datacenter config")
}

func TestDefaultsAreThoseOfTheSchemas(t *testing.T) {
	crds, err := config.CRDs()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	schemaOf := func(kind string) *apiextensionsv1.JSONSchemaProps {
		for _, crd := range crds {
			if crd.Spec.Group == infrav1.GroupVersion.Group && crd.Spec.Names.Kind == kind {
				for _, v := range crd.Spec.Versions {
					if v.Name == infrav1.GroupVersion.Version {
						spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
						return &spec
					}
				}
			}
		}
		return nil
	}
	for _, p := range All() {
		for _, c := range []Config{p.DatacenterConfig, p.MachineConfig} {
			t.Run(c.Kind, func(t *testing.T) {
				g := NewWithT(t)
				schema := schemaOf(c.Kind)
				g.Expect(schema).NotTo(BeNil(), "a CRD serves %s", c.Kind)
				obj := c.New()
				if c.Default != nil {
					c.Default(obj)
				}
				u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
				g.Expect(err).NotTo(HaveOccurred())
				spec, _ := u["spec"].(map[string]any)
				defaults := 0
				for name, prop := range schema.Properties {
					if prop.Default == nil {
						continue
					}
					defaults++
					var want any
					g.Expect(json.Unmarshal(prop.Default.Raw, &want)).To(Succeed())
					g.Expect(spec).To(HaveKeyWithValue(name, want), "spec.%s is defaulted as the schema defaults it", name)
				}
				if c.Default == nil {
					g.Expect(defaults).To(BeZero(), "the schema defaults fields, and Default is nil")
				}
			})
		}
	}
}
