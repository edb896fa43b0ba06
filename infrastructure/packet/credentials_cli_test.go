package packet_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cli/spec"
)

func TestCreatingAPacketClusterStoresTheAPIKeyInFlotillaSystem(t *testing.T) {
	ctx := context.Background()
	packetSpec := func(secretName string) *spec.Spec {
		return &spec.Spec{Provider: spec.ProviderPacket, Datacenter: &infrav1.PacketDatacenterConfig{
			Spec: infrav1.PacketDatacenterConfigSpec{ProjectID: "p", Metro: "da", CredentialsSecretName: secretName},
		}}
	}
	tests := []struct {
		name    string
		secret  string
		key     string
		wantErr string
		wantKey string
	}{
		{name: "the key from PACKET_API_KEY is written to the Secret the datacenter config names", secret: "cli-written", key: "k1", wantKey: "k1"},
		{name: "a new key replaces the stored one", secret: "cli-written", key: "k2", wantKey: "k2"},
		{name: "without a key an existing Secret is used as it is", secret: "cli-written", wantKey: "k2"},
		{name: "without a key and without a Secret the error says to set PACKET_API_KEY", secret: "never-written", wantErr: "set PACKET_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := client.EnsurePacketCredentials(ctx, env.Client, packetSpec(tt.secret), tt.key)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			secret := get(g, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: infrav1.PacketCredentialsNamespace, Name: tt.secret}})
			g.Expect(string(secret.Data[infrav1.PacketAPIKeySecretKey])).To(Equal(tt.wantKey))
		})
	}

	g := NewWithT(t)
	g.Expect(client.EnsurePacketCredentials(ctx, env.Client, &spec.Spec{Provider: spec.ProviderLocal}, "ignored")).To(Succeed(),
		"other providers need no key")
}
