package spec

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/infrastructure/providers"
)

// The providers of a spec file are those of the registry: `generate clusterconfig` writes a spec
// for each, which loads as that provider's with its config kinds, and a kind a file may not hold
// is refused with every provider's kinds.
func TestTheProvidersAreTheRegistrys(t *testing.T) {
	for _, p := range providers.All() {
		t.Run(p.Name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Providers()).To(ContainElement(p.Name))
			out, err := Generate(GenerateOptions{Name: "c1", Provider: p.Name, Workers: 1})
			g.Expect(err).NotTo(HaveOccurred())
			s, err := Parse("c1.yaml", out)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.Provider).To(Equal(p.Name))
			g.Expect(s.Datacenter.GetObjectKind().GroupVersionKind()).To(Equal(p.DatacenterConfig.GroupVersionKind()))
			g.Expect(s.MachineConfigs).NotTo(BeEmpty())
			for _, mc := range s.MachineConfigs {
				g.Expect(mc.GetObjectKind().GroupVersionKind()).To(Equal(p.MachineConfig.GroupVersionKind()))
			}
		})
	}

	t.Run("a kind no spec file holds is refused with every provider's kinds", func(t *testing.T) {
		g := NewWithT(t)
		_, err := Parse("c1.yaml", []byte("apiVersion: infrastructure.flotilla.dev/v1alpha1\nkind: DockerDatacenterConfig\nmetadata:\n  name: c1\n"))
		g.Expect(err).To(HaveOccurred())
		for _, kind := range append(providers.DatacenterKinds(), providers.MachineConfigKinds()...) {
			g.Expect(err.Error()).To(ContainSubstring(kind))
		}
	})
}
