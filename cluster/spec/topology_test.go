package spec

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

func inMemorySpec(t *testing.T) string {
	t.Helper()
	out, err := Generate(GenerateOptions{Name: "c1", Provider: ProviderInMemory, Workers: 1})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return string(out)
}

func TestInMemorySpecHoldsTheClusterAfterItsClassAndTemplates(t *testing.T) {
	g := NewWithT(t)
	s, err := Parse("c1.yaml", []byte(inMemorySpec(t)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Provider).To(Equal(ProviderClusterClass))
	g.Expect(s.Datacenter).To(BeNil())
	g.Expect(s.Cluster.Spec.Topology.Class).To(Equal(InMemoryClusterClass))
	g.Expect(s.Cluster.Spec.WorkerNodeGroups[0].Class).To(Equal("default-worker"))
	var kinds []string
	for _, obj := range s.Objects {
		kinds = append(kinds, obj.GetObjectKind().GroupVersionKind().Kind)
	}
	g.Expect(kinds).To(Equal([]string{"DevClusterTemplate", "KubeadmControlPlaneTemplate", "DevMachineTemplate",
		"DevMachineTemplate", "KubeadmConfigTemplate", "ClusterClass", "Cluster"}))
	g.Expect(s.Objects[5]).To(BeAssignableToTypeOf(&clusterv1.ClusterClass{}))
}

func TestGenerateRefusesAnInMemoryManagementCluster(t *testing.T) {
	_, err := Generate(GenerateOptions{Name: "mgmt", Provider: ProviderInMemory, Management: true})
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("a cluster of Cluster API's in-memory provider is a workload cluster")))
}

func TestParseRejectsInvalidTopologySpecs(t *testing.T) {
	tests := []struct {
		name string
		edit func(string) string
		want string
	}{
		{
			name: "a group without a class",
			edit: func(s string) string { return strings.Replace(s, "      class: default-worker\n", "", 1) },
			want: "spec.workerNodeGroups[0].class: missing; name the ClusterClass's worker class",
		},
		{
			name: "a worker class the ClusterClass in the file does not have",
			edit: func(s string) string {
				return strings.Replace(s, "      class: default-worker\n", "      class: gpu\n", 1)
			},
			want: `spec.workerNodeGroups[0].class: "gpu" is not a worker class of ClusterClass "in-memory"; use one of "default-worker"`,
		},
		{
			name: "a class the file's ClusterClass is not",
			edit: func(s string) string { return strings.Replace(s, "    class: in-memory\n", "    class: other\n", 1) },
			want: `spec.topology.class: "other" is not the ClusterClass of c1.yaml, "in-memory"`,
		},
		{
			name: "a template the ClusterClass references and the file does not hold",
			edit: func(s string) string {
				i := strings.Index(s, "---\n# The workers' kubeadm configuration")
				return s[:i]
			},
			want: `spec.workers.machineDeployments[0].bootstrap.templateRef: KubeadmConfigTemplate "in-memory-default-worker" (bootstrap.cluster.x-k8s.io/v1beta2) not found in c1.yaml`,
		},
		{
			name: "a datacenterRef besides the topology",
			edit: func(s string) string {
				return strings.Replace(s, "  topology:\n", "  datacenterRef:\n    kind: LocalDatacenterConfig\n    name: c1\n  topology:\n", 1)
			},
			want: "spec.datacenterRef: a cluster of a ClusterClass (spec.topology) takes its infrastructure from the class",
		},
		{
			name: "a ClusterClass in the file of a local cluster",
			edit: func(s string) string {
				local, _ := Generate(GenerateOptions{Name: "c1", Provider: ProviderLocal, Workers: 1})
				return string(local) + "\n---\n" + s[strings.Index(s, "apiVersion: cluster.x-k8s.io/v1beta2"):]
			},
			want: "ClusterClass belongs to a cluster of a ClusterClass, and this Cluster names no spec.topology",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Parse("c1.yaml", []byte(tt.edit(inMemorySpec(t))))
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
		})
	}
}
