package spec

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

func TestAGeneratedPacketSpecParsesWithItsDefaults(t *testing.T) {
	g := NewWithT(t)
	out, err := Generate(GenerateOptions{Name: "metal", Provider: ProviderPacket, Workers: 3})
	g.Expect(err).NotTo(HaveOccurred())
	s, err := Parse("metal.yaml", out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s.Provider).To(Equal(ProviderPacket))
	dc, ok := s.Datacenter.(*infrav1.PacketDatacenterConfig)
	g.Expect(ok).To(BeTrue())
	g.Expect(dc.Spec.IdentityRef).To(BeNil(), "the default identity, chosen by an admin")
	g.Expect(dc.Spec.Metro).To(Equal("da"))
	g.Expect(s.MachineConfigs).To(HaveKey("metal-cp"))
	g.Expect(s.MachineConfigs).To(HaveKey("metal-workers"))
	g.Expect(s.Cluster.Spec.WorkerNodeGroups[0].Count).To(BeEquivalentTo(3))
}

func TestPacketSpecProblems(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(string) string
		problem string
		// lineOf, when set, is text of the edited spec on the line the problem names.
		lineOf string
	}{
		{
			name:    "a metro that is no metro code is refused at its line",
			edit:    func(s string) string { return strings.Replace(s, "metro: da", "metro: Dallas", 1) },
			problem: `document 2 (PacketDatacenterConfig "metal"): spec.metro: "Dallas" is not a metro code: use two lowercase letters, such as da`,
			lineOf:  "metro: Dallas",
		},
		{
			name: "a private key given as an SSH key is refused without echoing it",
			edit: func(s string) string {
				return strings.Replace(s, "  billingCycle: hourly\n", "  billingCycle: hourly\n  sshAuthorizedKeys: [\"-----BEGIN OPENSSH PRIVATE KEY----- AAAAprivatebody\"]\n", 1)
			},
			problem: `spec.sshAuthorizedKeys[0]: this is a private key`,
			lineOf:  "sshAuthorizedKeys:",
		},
		{
			name:    "a Packet management cluster is refused",
			edit:    func(s string) string { return strings.Replace(s, "management: false", "management: true", 1) },
			problem: "a Packet cluster is a workload cluster",
		},
		{
			name: "a control plane without a machine config is refused",
			edit: func(s string) string {
				return strings.Replace(s, "    machineGroupRef:\n      kind: PacketMachineConfig\n      name: metal-cp\n", "", 1)
			},
			problem: "name the PacketMachineConfig of the control plane devices",
		},
		{
			name: "a local machine config in a Packet cluster is refused",
			edit: func(s string) string {
				return strings.Replace(s, "kind: PacketMachineConfig\n        name: metal-workers", "kind: LocalMachineConfig\n        name: metal-workers", 1)
			},
			problem: "LocalMachineConfig",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			out, err := Generate(GenerateOptions{Name: "metal", Provider: ProviderPacket, Workers: 1})
			g.Expect(err).NotTo(HaveOccurred())
			edited := tt.edit(string(out))
			g.Expect(edited).NotTo(Equal(string(out)), "the edit applies")
			_, err = Parse("metal.yaml", []byte(edited))
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.problem))
			g.Expect(err.Error()).NotTo(ContainSubstring("privatebody"))
			if tt.lineOf != "" {
				line := strings.Count(edited[:strings.Index(edited, tt.lineOf)], "\n") + 1
				g.Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("metal.yaml:%d: ", line)))
			}
		})
	}
}
