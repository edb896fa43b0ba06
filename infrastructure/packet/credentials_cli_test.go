package packet_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
)

func TestCreatingAPacketClusterMakesTheAdminsIdentity(t *testing.T) {
	ctx := context.Background()
	ns := env.NewNamespace(t)
	packetSpec := func(identity string) *spec.Spec {
		return &spec.Spec{Provider: spec.ProviderPacket, Datacenter: &infrav1.PacketDatacenterConfig{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metal"},
			Spec: infrav1.PacketDatacenterConfigSpec{ProjectID: "p", Metro: "da",
				IdentityRef: &infrav1.PacketClusterIdentityReference{Name: identity}},
		}}
	}
	const simulator = "http://127.0.0.1:8089/metal/v1"
	tests := []struct {
		name     string
		identity string
		creds    client.PacketCredentials
		wantErr  string
		wantKey  string
	}{
		{name: "an admin's key and API create the identity the datacenter config names, for its namespace",
			identity: "cli-made", creds: client.PacketCredentials{APIKey: "k1", APIURL: simulator}, wantKey: "k1"},
		{name: "a new key replaces the stored one", identity: "cli-made", creds: client.PacketCredentials{APIKey: "k2"}, wantKey: "k2"},
		{name: "without a key an existing identity is used as it is", identity: "cli-made", wantKey: "k2"},
		{name: "a key for another API is refused rather than sent elsewhere than the identity says", identity: "cli-made",
			creds: client.PacketCredentials{APIKey: "k3", APIURL: "https://metal.example.com/metal/v1"}, wantErr: "sends its key to " + simulator},
		{name: "without a key a missing identity is an error that says how to make it", identity: "never-made", wantErr: "with the Metal API key in PACKET_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := client.EnsurePacketCredentials(ctx, env.Client, packetSpec(tt.identity), tt.creds)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			identity := get(g, &infrav1.PacketClusterIdentity{ObjectMeta: metav1.ObjectMeta{Name: tt.identity}})
			g.Expect(identity.Spec.APIURL).To(Equal(simulator))
			g.Expect(identity.Spec.AllowedNamespaces).To(Equal(&infrav1.AllowedNamespaces{List: []string{ns}}))
			g.Expect(identity.Spec.CredentialsSecretName).To(Equal("packet-credentials-cli-made"))
			secret := get(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: infrav1.PacketCredentialsNamespace, Name: identity.Spec.CredentialsSecretName}})
			g.Expect(string(secret.Data[infrav1.PacketAPIKeySecretKey])).To(Equal(tt.wantKey))
		})
	}

	t.Run("a cluster creator may not store a key, and without one leaves the identity to the provider", func(t *testing.T) {
		g := NewWithT(t)
		tenant := tenantClient(t, ns, "tenant-cli")
		err := client.EnsurePacketCredentials(ctx, tenant, packetSpec("cli-made"), client.PacketCredentials{APIKey: "hers"})
		g.Expect(err).To(MatchError(ContainSubstring("only an admin stores a Metal API key")))
		g.Expect(client.EnsurePacketCredentials(ctx, tenant, packetSpec("cli-made"), client.PacketCredentials{})).To(Succeed())
		secret := get(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: infrav1.PacketCredentialsNamespace, Name: "packet-credentials-cli-made"}})
		g.Expect(string(secret.Data[infrav1.PacketAPIKeySecretKey])).To(Equal("k2"), "the admin's key is unchanged")
	})

	g := NewWithT(t)
	g.Expect(client.EnsurePacketCredentials(ctx, env.Client, &spec.Spec{Provider: spec.ProviderLocal}, client.PacketCredentials{APIKey: "ignored"})).To(Succeed(),
		"other providers need no key")
}
