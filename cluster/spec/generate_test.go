package spec

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

func TestGenerateRoundTripsThroughParse(t *testing.T) {
	tests := []struct {
		name        string
		opts        GenerateOptions
		wantVersion string
	}{
		{
			name:        "a workload cluster with the defaults",
			opts:        GenerateOptions{Name: "w1", Provider: ProviderLocal, Workers: 2},
			wantVersion: "v1.36.3",
		},
		{
			name:        "a management cluster",
			opts:        GenerateOptions{Name: "mgmt", Provider: ProviderLocal, Management: true, Workers: 2},
			wantVersion: "v1.36.3",
		},
		{
			name:        "the previous Kubernetes minor, written with a v",
			opts:        GenerateOptions{Name: "old", Provider: ProviderLocal, KubernetesVersion: "v1.35", Workers: 1},
			wantVersion: "v1.35.4",
		},
		{
			name:        "no workers",
			opts:        GenerateOptions{Name: "cp-only", Provider: ProviderLocal, KubernetesVersion: "1.36"},
			wantVersion: "v1.36.3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			out, err := Generate(tt.opts)
			g.Expect(err).NotTo(HaveOccurred())
			s, err := Parse(tt.opts.Name+".yaml", out)

			g.Expect(err).NotTo(HaveOccurred())
			c := s.Cluster
			g.Expect(c.Name).To(Equal(tt.opts.Name))
			g.Expect(c.Spec.Management).To(Equal(tt.opts.Management))
			g.Expect(s.KubernetesVersion).To(Equal(tt.wantVersion))
			g.Expect(c.Spec.WorkerNodeGroups).To(HaveLen(1))
			g.Expect(c.Spec.WorkerNodeGroups[0].Name).To(Equal(DefaultWorkerGroup))
			g.Expect(c.Spec.WorkerNodeGroups[0].Count).To(Equal(tt.opts.Workers))
			g.Expect(s.Datacenter).To(BeAssignableToTypeOf(&infrav1.LocalDatacenterConfig{}))
			g.Expect(s.MachineConfigs).To(HaveKey(tt.opts.Name + "-workers"))
			if tt.opts.Management {
				g.Expect(c.Spec.ManagementCluster.Name).To(Equal(tt.opts.Name))
			} else {
				g.Expect(c.Spec.ManagementCluster.Name).To(BeEmpty())
			}
		})
	}
}

func TestGenerateAddsAGroupOfRealWorkers(t *testing.T) {
	g := NewWithT(t)
	out, err := Generate(GenerateOptions{Name: "w1", Provider: ProviderLocal, Workers: 1, RealWorkers: 1})
	g.Expect(err).NotTo(HaveOccurred())
	s, err := Parse("w1.yaml", out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Cluster.Spec.WorkerNodeGroups).To(HaveLen(2))
	g.Expect(s.Cluster.Spec.WorkerNodeGroups[0].NodesOf()).To(Equal(flotillav1.SimulatedNodes))
	g.Expect(s.Cluster.Spec.WorkerNodeGroups[1].Name).To(Equal("real"))
	g.Expect(s.Cluster.Spec.WorkerNodeGroups[1].Nodes).To(Equal(flotillav1.RealNodes))
	g.Expect(s.Cluster.Spec.WorkerNodeGroups[1].Count).To(Equal(int32(1)))
	g.Expect(s.Datacenter.(*infrav1.LocalDatacenterConfig).Spec.ImageMirror).To(Equal(infrav1.DefaultImageMirror))
	g.Expect(string(out)).To(ContainSubstring("--workers 1 --real-workers 1"), "the command that reproduces the output")

	_, err = Generate(GenerateOptions{Name: "w1", Provider: ProviderPacket, Workers: 1, RealWorkers: 1})
	g.Expect(err).To(MatchError(ContainSubstring("with the local provider only")))
}

func TestGenerateExplainsEveryField(t *testing.T) {
	g := NewWithT(t)
	out, err := Generate(GenerateOptions{Name: "w1", Provider: ProviderLocal, Workers: 2})
	g.Expect(err).NotTo(HaveOccurred())

	// Every field the user is expected to edit has a comment above it, starting with its name.
	lines := strings.Split(string(out), "\n")
	for _, field := range []string{
		"name", "namespace", "management", "kubernetesVersion", "count", "datacenterRef",
		"workerNodeGroups", "machineGroupRef", "clusterNetwork", "controllerManager", "scheduler", "capacity",
	} {
		found := false
		for i, line := range lines[1:] {
			key := strings.TrimPrefix(strings.TrimSpace(line), "- ")
			if strings.HasPrefix(key, field+":") && strings.Contains(lines[i], "#") {
				found = true
				break
			}
		}
		g.Expect(found).To(BeTrue(), "field %s has no comment above it", field)
	}
	g.Expect(string(out)).To(ContainSubstring("management: false"))
	g.Expect(string(out)).To(ContainSubstring("Without --kubeconfig, `flotilla create cluster`\n  # creates a management cluster, which needs management: true"))
	g.Expect(string(out)).To(ContainSubstring("Supported: 1.36, 1.35."))
}

func TestGenerateRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts GenerateOptions
		want string
	}{
		{
			name: "an unknown provider lists the supported ones",
			opts: GenerateOptions{Name: "w1", Provider: "aws"},
			want: `unknown provider "aws": supported providers are local, packet, inmemory`,
		},
		{
			name: "a name that is not a DNS label is rejected with a suggestion",
			opts: GenerateOptions{Name: "My.Cluster", Provider: ProviderLocal},
			want: `"My.Cluster" is not a valid cluster name: use at most 40 lowercase letters, digits and '-', starting and ending with a letter or digit, such as "my-cluster"`,
		},
		{
			name: "an unsupported Kubernetes version lists the supported ones",
			opts: GenerateOptions{Name: "w1", Provider: ProviderLocal, KubernetesVersion: "1.29"},
			want: `--kubernetes-version "1.29" is not supported: use one of 1.36, 1.35`,
		},
		{
			name: "a full Kubernetes version is not a minor version",
			opts: GenerateOptions{Name: "w1", Provider: ProviderLocal, KubernetesVersion: "v1.36.3"},
			want: `--kubernetes-version "v1.36.3" is a full version: use the minor version "1.36"`,
		},
		{
			name: "a negative number of workers is rejected",
			opts: GenerateOptions{Name: "w1", Provider: ProviderLocal, Workers: -1},
			want: `the number of workers (-1) is negative; use 0 or more`,
		},
		{
			name: "a negative number of real workers is rejected",
			opts: GenerateOptions{Name: "w1", Provider: ProviderLocal, RealWorkers: -1},
			want: `the number of real workers (-1) is negative; use 0 or more`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Generate(tt.opts)
			g.Expect(err).To(MatchError(tt.want))
		})
	}
}
