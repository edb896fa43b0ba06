package topology_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/flotilla-dev/flotilla/cluster/topology"
)

func TestFlotillaPath(t *testing.T) {
	tests := []struct{ capi, want string }{
		{"spec.topology.version", "spec.kubernetesVersion"},
		{"spec.topology.workers.machineDeployments[0].class", "spec.workerNodeGroups[0].class"},
		{"spec.topology.controlPlane.replicas", "spec.controlPlane.count"},
		{"spec.topology.classRef.name", "spec.topology.class"},
		{"spec.topology.variables[size].value", "spec.topology.variables[size].value"},
		{"spec.topology.versionSkew", "spec.topology.versionSkew"}, // a prefix of a name is not the name
		{"metadata.name", "metadata.name"},
	}
	for _, tt := range tests {
		t.Run(tt.capi, func(t *testing.T) {
			NewWithT(t).Expect(topology.FlotillaPath(tt.capi)).To(Equal(tt.want))
		})
	}
}

func TestFlotillaErrorsLeavesTheOriginalsAlone(t *testing.T) {
	g := NewWithT(t)
	in := field.ErrorList{field.Invalid(field.NewPath("spec", "topology", "version"), "1.36", "must start with v")}
	out := topology.FlotillaErrors(in)
	g.Expect(out[0].Field).To(Equal("spec.kubernetesVersion"))
	g.Expect(in[0].Field).To(Equal("spec.topology.version"))
}
