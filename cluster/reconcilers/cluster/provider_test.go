package cluster

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
)

// providerFor comes from the registry: every provider of it has its part of the reconciler, and
// a Cluster of its datacenter config kind gets that part.
func TestProviderForComesFromTheRegistry(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{}
	g.Expect(parts).To(HaveLen(len(providers.All())), "a part for each provider of the registry, none for another")
	for _, p := range providers.All() {
		g.Expect(parts).To(HaveKey(p.Name))
		c := testCluster(func(c *flotillav1.Cluster) { c.Spec.DatacenterRef.Kind = p.DatacenterConfig.Kind })
		g.Expect(fmt.Sprintf("%T", r.providerFor(c))).To(Equal(fmt.Sprintf("%T", parts[p.Name](r))), "the part of %s", p.Name)
	}
	g.Expect(r.providerFor(testCluster(func(c *flotillav1.Cluster) { c.Spec.Topology = &flotillav1.Topology{Class: "in-memory"} }))).
		To(BeAssignableToTypeOf(&clusterClassProvider{}), "a Cluster of a ClusterClass has no provider of the registry")
	g.Expect(r.providerFor(testCluster(func(c *flotillav1.Cluster) { c.Spec.DatacenterRef.Kind = "DockerDatacenterConfig" }))).
		To(BeAssignableToTypeOf(&localProvider{}), "an unknown kind is the local provider's to report")
}
