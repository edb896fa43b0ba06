package clusterspec

import (
	"testing"

	"github.com/flotilla-dev/flotilla/internal/fieldtest"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
)

// The public key of a throwaway test key pair, in authorized_keys form.
const testPublicKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA/PTutyBcbXNghTZ1PTvpKHkNIVjATBzT+fFLUh46QV test@example.com"

func TestValidateDatacenterConfig(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*infrav1.PacketDatacenterConfigSpec)
		wantFields []string
		wantText   string
	}{
		{name: "a complete config is accepted"},
		{
			name: "a config naming its identity is accepted",
			mutate: func(s *infrav1.PacketDatacenterConfigSpec) {
				s.IdentityRef = &infrav1.PacketClusterIdentityReference{Name: "team-a.metal"}
			},
		},
		{
			name: "an identity name that is no object name is rejected with the default to fall back to",
			mutate: func(s *infrav1.PacketDatacenterConfigSpec) {
				s.IdentityRef = &infrav1.PacketClusterIdentityReference{Name: "Team_A"}
			},
			wantFields: []string{"spec.identityRef.name"}, wantText: `leave identityRef out to use "default"`,
		},
		{
			name:       "a missing project and metro are required",
			mutate:     func(s *infrav1.PacketDatacenterConfigSpec) { s.ProjectID, s.Metro = "", "" },
			wantFields: []string{"spec.projectID", "spec.metro"}, wantText: "set the metro code",
		},
		{
			name:       "a metro that is no metro code is rejected",
			mutate:     func(s *infrav1.PacketDatacenterConfigSpec) { s.Metro = "Dallas" },
			wantFields: []string{"spec.metro"}, wantText: "two lowercase letters, such as da",
		},
		{
			name:       "a facility that is no facility code is rejected",
			mutate:     func(s *infrav1.PacketDatacenterConfigSpec) { s.Facility = "DA 11" },
			wantFields: []string{"spec.facility"}, wantText: "such as da11",
		},
		{
			name:       "an unknown VIP manager is rejected with the known ones",
			mutate:     func(s *infrav1.PacketDatacenterConfigSpec) { s.VIPManager = "keepalived" },
			wantFields: []string{"spec.vipManager"}, wantText: "use KUBE_VIP or CPEM",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dc := &infrav1.PacketDatacenterConfig{Spec: infrav1.PacketDatacenterConfigSpec{
				ProjectID: "p-1", Metro: "da", Facility: "da11", VIPManager: infrav1.VIPManagerKubeVIP,
			}}
			if tt.mutate != nil {
				tt.mutate(&dc.Spec)
			}
			fieldtest.Check(g, ValidateDatacenterConfig(dc), tt.wantFields, tt.wantText)
		})
	}
}

func TestValidateMachineConfig(t *testing.T) {
	privateKey := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n"
	tests := []struct {
		name       string
		mutate     func(*infrav1.PacketMachineConfigSpec)
		wantFields []string
		wantText   string
	}{
		{name: "a complete config is accepted"},
		{
			name:       "a missing plan is required",
			mutate:     func(s *infrav1.PacketMachineConfigSpec) { s.Plan = "" },
			wantFields: []string{"spec.plan"}, wantText: "name the device type",
		},
		{
			name:       "an unknown billing cycle is rejected with the known ones",
			mutate:     func(s *infrav1.PacketMachineConfigSpec) { s.BillingCycle = "weekly" },
			wantFields: []string{"spec.billingCycle"}, wantText: "use one of hourly, daily, monthly, yearly",
		},
		{
			name: "an SSH key that is not a public key is rejected",
			mutate: func(s *infrav1.PacketMachineConfigSpec) {
				s.SSHAuthorizedKeys = append(s.SSHAuthorizedKeys, "ssh-ed25519 not-base64")
			},
			wantFields: []string{"spec.sshAuthorizedKeys[1]"}, wantText: "not an SSH public key in authorized_keys form",
		},
		{
			name:       "a private key is refused",
			mutate:     func(s *infrav1.PacketMachineConfigSpec) { s.SSHAuthorizedKeys = []string{privateKey} },
			wantFields: []string{"spec.sshAuthorizedKeys[0]"}, wantText: "this is a private key: give the public key",
		},
		{
			name:   "tags of the user's own are accepted",
			mutate: func(s *infrav1.PacketMachineConfigSpec) { s.Tags = []string{"team:platform", "flotilla"} },
		},
		{
			name: "a tag in the provider's own namespace is refused: it would make the provider adopt the device as another cluster's",
			mutate: func(s *infrav1.PacketMachineConfigSpec) {
				s.Tags = []string{"team:platform", infrav1.PacketMachineTagPrefix + "default/admin-md-0-abcde"}
			},
			wantFields: []string{"spec.tags[1]"}, wantText: `tags starting with "flotilla:" are the provider's own`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			mc := &infrav1.PacketMachineConfig{Spec: infrav1.PacketMachineConfigSpec{
				Plan: "c3.small.x86", OS: "ubuntu_24_04", BillingCycle: "hourly", SSHAuthorizedKeys: []string{testPublicKey},
			}}
			if tt.mutate != nil {
				tt.mutate(&mc.Spec)
			}
			errs := ValidateMachineConfig(mc)
			fieldtest.Check(g, errs, tt.wantFields, tt.wantText)
			for _, err := range errs {
				g.Expect(err.Error()).NotTo(ContainSubstring("PRIVATE KEY"), "a key is never echoed")
			}
		})
	}
}

func TestValidateClusterIdentity(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*infrav1.PacketClusterIdentitySpec)
		wantFields []string
		wantText   string
	}{
		{name: "a complete identity is accepted"},
		{name: "a simulator on loopback over plain HTTP is accepted", mutate: func(s *infrav1.PacketClusterIdentitySpec) { s.APIURL = "http://127.0.0.1:8089/metal/v1" }},
		{name: "an identity every namespace may use is accepted", mutate: func(s *infrav1.PacketClusterIdentitySpec) { s.AllowedNamespaces = &infrav1.AllowedNamespaces{} }},
		{
			name:       "plain HTTP to another machine is refused: the key would go in the clear",
			mutate:     func(s *infrav1.PacketClusterIdentitySpec) { s.APIURL = "http://metal.example.com/metal/v1" },
			wantFields: []string{"spec.apiURL"}, wantText: "would send the API key in the clear",
		},
		{
			name:       "an API URL without a host is refused",
			mutate:     func(s *infrav1.PacketClusterIdentitySpec) { s.APIURL = "https:///metal/v1" },
			wantFields: []string{"spec.apiURL"}, wantText: "is not an absolute http(s) URL",
		},
		{
			name:       "a missing Secret is required",
			mutate:     func(s *infrav1.PacketClusterIdentitySpec) { s.CredentialsSecretName = "" },
			wantFields: []string{"spec.credentialsSecretName"}, wantText: `holds the Metal API key`,
		},
		{
			name:       "a Secret name that is no Secret name is refused",
			mutate:     func(s *infrav1.PacketClusterIdentitySpec) { s.CredentialsSecretName = "Packet_Key" },
			wantFields: []string{"spec.credentialsSecretName"}, wantText: "is not a Secret name",
		},
		{
			name: "a namespace that is no namespace name and an invalid selector are refused",
			mutate: func(s *infrav1.PacketClusterIdentitySpec) {
				s.AllowedNamespaces = &infrav1.AllowedNamespaces{List: []string{"team-a", "Team B"}, Selector: &metav1.LabelSelector{
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: "Near"}}}}
			},
			wantFields: []string{"spec.allowedNamespaces.list[1]", "spec.allowedNamespaces.selector.matchExpressions[0].operator"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			id := &infrav1.PacketClusterIdentity{Spec: infrav1.PacketClusterIdentitySpec{
				APIURL: infrav1.DefaultPacketAPIURL, CredentialsSecretName: "packet-credentials",
				AllowedNamespaces: &infrav1.AllowedNamespaces{List: []string{"team-a"}},
			}}
			if tt.mutate != nil {
				tt.mutate(&id.Spec)
			}
			fieldtest.Check(g, ValidateClusterIdentity(id), tt.wantFields, tt.wantText)
		})
	}
}
