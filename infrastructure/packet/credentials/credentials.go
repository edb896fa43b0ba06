package credentials

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

// ErrUnavailable is wrapped by errors about a missing Secret or key: waiting (for someone to
// create it) is the remedy, not retrying fast.
var ErrUnavailable = errors.New("the Metal API credentials are unavailable")

// NewClientFunc builds a Metal API client for a base URL and key.
type NewClientFunc func(apiURL, apiKey string) (metal.Interface, error)

// NewMetalClient is the NewClientFunc of the real client.
func NewMetalClient(apiURL, apiKey string) (metal.Interface, error) {
	return metal.New(metal.Options{BaseURL: apiURL, APIKey: apiKey})
}

// SecretName returns the credentials Secret a PacketCluster uses.
func SecretName(pc *infrav1.PacketCluster) string {
	if pc.Spec.CredentialsSecretName != "" {
		return pc.Spec.CredentialsSecretName
	}
	return infrav1.DefaultPacketCredentialsSecret
}

// APIURL returns the Metal API root a PacketCluster uses.
func APIURL(pc *infrav1.PacketCluster) string {
	if pc.Spec.APIURL != "" {
		return pc.Spec.APIURL
	}
	return infrav1.DefaultPacketAPIURL
}

// ClientFor returns a client for pc's API with the key from its credentials Secret, read with
// reader (an uncached reader, so the manager does not cache every Secret).
func ClientFor(ctx context.Context, reader ctrlclient.Reader, newClient NewClientFunc, pc *infrav1.PacketCluster) (metal.Interface, error) {
	name := SecretName(pc)
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, ctrlclient.ObjectKey{Namespace: infrav1.PacketCredentialsNamespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Secret %s/%s does not exist", ErrUnavailable, infrav1.PacketCredentialsNamespace, name)
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", infrav1.PacketCredentialsNamespace, name, err)
	}
	key := string(secret.Data[infrav1.PacketAPIKeySecretKey])
	if key == "" {
		return nil, fmt.Errorf("%w: Secret %s/%s has no %q", ErrUnavailable, infrav1.PacketCredentialsNamespace, name, infrav1.PacketAPIKeySecretKey)
	}
	c, err := newClient(APIURL(pc), key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return c, nil
}
