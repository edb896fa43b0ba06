package cluster_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/infrastructure/providers"
)

// The configs of every provider of the registry are watched: a Cluster created before its
// configs is an invalid spec naming the missing datacenter config, and proceeds once they are
// created, with no other change to wake it.
func TestAClusterProceedsOnceItsProvidersConfigsAreCreated(t *testing.T) {
	for _, p := range providers.All() {
		t.Run(p.Name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.NewNamespace(t)
			generated, err := spec.Generate(spec.GenerateOptions{Name: ns, Provider: p.Name, Workers: 1})
			g.Expect(err).NotTo(HaveOccurred())
			s, err := spec.Parse(ns+".yaml", generated)
			g.Expect(err).NotTo(HaveOccurred())
			for _, obj := range s.Objects {
				obj.SetNamespace(ns)
			}
			c := s.Cluster
			c.Spec.ManagementCluster.Name = "mgmt"
			g.Expect(env.Client.Create(ctx, c)).To(Succeed())
			g.Eventually(func(g Gomega) {
				ready := conditionOf(g, c, flotillav1.ReadyCondition)
				g.Expect(ready.Reason).To(Equal(flotillav1.InvalidSpecReason))
				g.Expect(ready.Message).To(ContainSubstring("no %s named %q", p.DatacenterConfig.Kind, c.Spec.DatacenterRef.Name))
			}, timeout, interval).Should(Succeed())

			for _, obj := range s.Objects {
				if obj != ctrlclient.Object(c) {
					g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
				}
			}
			g.Eventually(func(g Gomega) {
				g.Expect(conditionOf(g, c, flotillav1.ReadyCondition).Reason).NotTo(Equal(flotillav1.InvalidSpecReason))
			}, timeout, interval).Should(Succeed())
		})
	}
}
