package validation

import (
	"testing"

	"github.com/flotilla-dev/flotilla/internal/fieldtest"

	. "github.com/onsi/gomega"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
)

// The providers a Cluster may use are those of the registry: each one's datacenter and machine
// config kinds are accepted, another provider's machine config is refused, and the messages list
// the registry's kinds.
func TestTheProvidersAreTheRegistrys(t *testing.T) {
	for _, p := range providers.All() {
		t.Run(p.Name, func(t *testing.T) {
			g := NewWithT(t)
			c := validCluster(func(c *flotillav1.Cluster) {
				c.Spec.DatacenterRef.Kind = p.DatacenterConfig.Kind
				c.Spec.ControlPlane.MachineGroupRef = &flotillav1.Ref{Kind: p.MachineConfig.Kind, Name: "cp"}
				c.Spec.WorkerNodeGroups[0].MachineGroupRef.Kind = p.MachineConfig.Kind
			})
			g.Expect(ValidateCluster(c)).To(BeEmpty())

			for _, other := range providers.All() {
				if other.Name == p.Name {
					continue
				}
				mixed := c.DeepCopy()
				mixed.Spec.WorkerNodeGroups[0].MachineGroupRef.Kind = other.MachineConfig.Kind
				errs := ValidateCluster(mixed)
				g.Expect(fieldtest.Fields(errs)).To(ConsistOf("spec.workerNodeGroups[0].machineGroupRef.kind"))
				g.Expect(errs.ToAggregate().Error()).To(ContainSubstring("is not a machine config of the %s provider; use %s", p.Name, p.MachineConfig.Kind))
			}
		})
	}

	t.Run("a kind of no provider is refused with every provider's kinds", func(t *testing.T) {
		g := NewWithT(t)
		errs := ValidateCluster(validCluster(func(c *flotillav1.Cluster) { c.Spec.DatacenterRef.Kind = "DockerDatacenterConfig" }))
		g.Expect(fieldtest.Fields(errs)).To(ConsistOf("spec.datacenterRef.kind"))
		for _, kind := range providers.DatacenterKinds() {
			g.Expect(errs.ToAggregate().Error()).To(ContainSubstring(kind))
		}
	})
}
