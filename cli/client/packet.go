package client

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/spec"
)

// PacketAPIKeyEnv is the environment variable holding the Equinix Metal (Packet) API key.
const PacketAPIKeyEnv = "PACKET_API_KEY" //nolint:gosec // the variable's name, not a credential

// EnsurePacketCredentials stores apiKey in the credentials Secret (in flotilla-system) that the
// spec's PacketDatacenterConfig names, before the cluster is created. It does nothing for other
// providers. Without a key (PACKET_API_KEY unset) the Secret must already exist: an
// administrator may have created it for people who cannot write flotilla-system; if it does not,
// the error says to set PACKET_API_KEY.
func EnsurePacketCredentials(ctx context.Context, kc ctrlclient.Client, s *spec.Spec, apiKey string) error {
	dc, ok := s.Datacenter.(*infrav1.PacketDatacenterConfig)
	if s.Provider != spec.ProviderPacket || !ok {
		return nil
	}
	name := dc.Spec.CredentialsSecretName
	if name == "" {
		name = infrav1.DefaultPacketCredentialsSecret
	}
	key := ctrlclient.ObjectKey{Namespace: infrav1.PacketCredentialsNamespace, Name: name}
	if apiKey == "" {
		err := kc.Get(ctx, key, &corev1.Secret{})
		switch {
		case err == nil, apierrors.IsForbidden(err):
			// It exists, or we may not look: the provider reports a missing key on the cluster.
			return nil
		case apierrors.IsNotFound(err):
			return fmt.Errorf("the Metal API key is missing: set %s (it is stored in Secret %s/%s)", PacketAPIKeyEnv, key.Namespace, key.Name)
		default:
			return fmt.Errorf("reading Secret %s/%s: %w", key.Namespace, key.Name, err)
		}
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{infrav1.PacketAPIKeySecretKey: []byte(apiKey)},
	}
	if err := applyObjects(ctx, kc, []ctrlclient.Object{secret}); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("storing the Metal API key in Secret %s/%s is not allowed for you: ask an administrator to create it, and unset %s: %w",
				key.Namespace, key.Name, PacketAPIKeyEnv, err)
		}
		return fmt.Errorf("storing the Metal API key in Secret %s/%s: %w", key.Namespace, key.Name, err)
	}
	return nil
}
