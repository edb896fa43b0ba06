package client

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/credentials"
)

// Environment variables of the Equinix Metal (Packet) credentials an admin hands the CLI.
const (
	// PacketAPIKeyEnv holds the Metal API key.
	PacketAPIKeyEnv = "PACKET_API_KEY" //nolint:gosec // the variable's name, not a credential
	// PacketAPIURLEnv holds the Metal API root the key is sent to, for a PacketClusterIdentity
	// the CLI creates; the public API when unset.
	PacketAPIURLEnv = "PACKET_API_URL"
)

// PacketCredentials are what an admin hands `flotilla create cluster` for a Packet cluster.
type PacketCredentials struct {
	// APIKey is the Metal API key; "" when the identity holds one already.
	APIKey string
	// APIURL is the Metal API root of an identity the CLI creates; the public API when "".
	APIURL string
}

// EnsurePacketCredentials makes sure the PacketClusterIdentity the spec's PacketDatacenterConfig
// names (identityRef, "default" when it names none) exists before the cluster is created. It
// does nothing for other providers. Identities and their Secrets belong to admins:
//
//   - With no key, the identity must exist (or the user may not read identities, which is every
//     cluster creator's case: the provider then reports on the cluster what is missing).
//   - With a key, the user must be an admin: the key is stored in the identity's Secret in
//     flotilla-system; a missing identity is created, sending the key to creds.APIURL and
//     allowing the spec's namespace only. An existing identity keeps its API and namespaces:
//     a different creds.APIURL is an error rather than a silent change of where the key goes.
func EnsurePacketCredentials(ctx context.Context, kc ctrlclient.Client, s *spec.Spec, creds PacketCredentials) error {
	dc, ok := s.Datacenter.(*infrav1.PacketDatacenterConfig)
	if s.Provider != spec.ProviderPacket || !ok {
		return nil
	}
	name := credentials.IdentityName(dc.Spec.IdentityRef)
	identity := &infrav1.PacketClusterIdentity{}
	err := kc.Get(ctx, ctrlclient.ObjectKey{Name: name}, identity)
	var create []ctrlclient.Object
	switch {
	case apierrors.IsForbidden(err) && creds.APIKey == "":
		return nil
	case apierrors.IsForbidden(err):
		return fmt.Errorf("only an admin stores a Metal API key: unset %s, and ask an admin for a PacketClusterIdentity %q that allows namespace %q: %w",
			PacketAPIKeyEnv, name, dc.Namespace, err)
	case apierrors.IsNotFound(err) && creds.APIKey == "":
		return fmt.Errorf("PacketClusterIdentity %q does not exist: an admin creates it by running this command with the Metal API key in %s (and %s for a simulator), or with kubectl (see docs/packet-provider.md)",
			name, PacketAPIKeyEnv, PacketAPIURLEnv)
	case apierrors.IsNotFound(err):
		identity = newPacketIdentity(name, dc.Namespace, creds.APIURL)
		create = append(create, identity)
	case err != nil:
		return fmt.Errorf("reading PacketClusterIdentity %s: %w", name, err)
	case creds.APIKey == "":
		return nil
	case creds.APIURL != "" && creds.APIURL != credentials.APIURL(identity):
		return fmt.Errorf("PacketClusterIdentity %q sends its key to %s, not to %s (%s): change the identity itself to send it elsewhere, or unset %s",
			name, credentials.APIURL(identity), creds.APIURL, PacketAPIURLEnv, PacketAPIURLEnv)
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: infrav1.PacketCredentialsNamespace, Name: identity.Spec.CredentialsSecretName},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{infrav1.PacketAPIKeySecretKey: []byte(creds.APIKey)},
	}
	// The Secret first: the identity never names a Secret that is not there yet.
	if err := applyObjects(ctx, kc, append([]ctrlclient.Object{secret}, create...)); err != nil {
		return fmt.Errorf("storing the Metal API key of PacketClusterIdentity %q in Secret %s/%s: %w",
			name, secret.Namespace, secret.Name, err)
	}
	return nil
}

// newPacketIdentity is the PacketClusterIdentity the CLI creates: the key in
// DefaultPacketCredentialsSecret (for the default identity) or packet-credentials-<name>, sent to
// apiURL (the public API when ""), for the clusters of namespace only.
func newPacketIdentity(name, namespace, apiURL string) *infrav1.PacketClusterIdentity {
	secret := infrav1.DefaultPacketCredentialsSecret
	if name != infrav1.DefaultPacketClusterIdentity {
		secret += "-" + name
	}
	if apiURL == "" {
		apiURL = infrav1.DefaultPacketAPIURL
	}
	return &infrav1.PacketClusterIdentity{
		TypeMeta:   metav1.TypeMeta{APIVersion: infrav1.GroupVersion.String(), Kind: "PacketClusterIdentity"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: infrav1.PacketClusterIdentitySpec{
			APIURL:                apiURL,
			CredentialsSecretName: secret,
			AllowedNamespaces:     &infrav1.AllowedNamespaces{List: []string{namespace}},
		},
	}
}
