package registrymirror

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// Keys of a mirror's credentials Secret, each optional.
const (
	UsernameKey = "username"
	PasswordKey = "password"
	CAKey       = "ca.crt"
)

// Key is the management cluster's mirror ConfigMap.
var Key = ctrlclient.ObjectKey{Namespace: flotillav1.SystemNamespace, Name: flotillav1.RegistryMirrorConfigMapName}

// Settings describe a mirror as an object spells it: the registry, the Secret with its
// credentials and CA (in Namespace), and its transport.
type Settings struct {
	// Field names the setting in errors, such as "spec.registryMirror".
	Field string
	// Registry is host[:port][/prefix].
	Registry string
	// Namespace and CredentialsSecret name the Secret with the keys username, password and
	// ca.crt (each optional); no Secret when CredentialsSecret is empty.
	Namespace, CredentialsSecret string
	// CASecret optionally names another Secret in Namespace whose ca.crt is the mirror's CA.
	CASecret              string
	PlainHTTP             bool
	InsecureSkipTLSVerify bool
}

// Resolve checks s and reads its Secrets into a Mirror.
func Resolve(ctx context.Context, c ctrlclient.Reader, s Settings) (*registryconn.Mirror, error) {
	if _, _, err := registryconn.SplitRegistry(s.Registry); err != nil {
		return nil, fmt.Errorf("%s.registry: %w", s.Field, err)
	}
	m := &registryconn.Mirror{Registry: s.Registry, Connection: registryconn.Config{
		PlainHTTP: s.PlainHTTP, InsecureSkipTLSVerify: s.InsecureSkipTLSVerify}}
	if s.CredentialsSecret != "" {
		data, err := secretData(ctx, c, s.Namespace, s.CredentialsSecret, s.Field)
		if err != nil {
			return nil, err
		}
		m.Connection.Username, m.Connection.Password = string(data[UsernameKey]), string(data[PasswordKey])
		m.Connection.CAData = data[CAKey]
		if (m.Connection.Username == "") != (m.Connection.Password == "") {
			return nil, fmt.Errorf("%s: the mirror's credentials Secret %s/%s needs both %s and %s, or neither",
				s.Field, s.Namespace, s.CredentialsSecret, UsernameKey, PasswordKey)
		}
	}
	if s.CASecret != "" {
		data, err := secretData(ctx, c, s.Namespace, s.CASecret, s.Field)
		if err != nil {
			return nil, err
		}
		if m.Connection.CAData = data[CAKey]; len(m.Connection.CAData) == 0 {
			return nil, fmt.Errorf("%s: the mirror's CA Secret %s/%s has no key %s", s.Field, s.Namespace, s.CASecret, CAKey)
		}
	}
	if m.Connection.PlainHTTP && (len(m.Connection.CAData) > 0 || m.Connection.InsecureSkipTLSVerify) {
		return nil, fmt.Errorf("%s: plainHTTP speaks no TLS: drop the CA and insecureSkipTLSVerify, or plainHTTP", s.Field)
	}
	return m, nil
}

func secretData(ctx context.Context, c ctrlclient.Reader, namespace, name, field string) (map[string][]byte, error) {
	secret := &corev1.Secret{}
	if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return nil, fmt.Errorf("%s: reading the mirror's Secret %s/%s: %w", field, namespace, name, err)
	}
	return secret.Data, nil
}

// ClusterWide reads the management cluster's mirror: nil when the ConfigMap does not exist.
func ClusterWide(ctx context.Context, c ctrlclient.Reader) (*registryconn.Mirror, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, Key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading ConfigMap %s: %w", Key, err)
	}
	return Resolve(ctx, c, Settings{
		Field:                 "ConfigMap " + Key.String(),
		Registry:              cm.Data[flotillav1.RegistryMirrorRegistryKey],
		Namespace:             Key.Namespace,
		CredentialsSecret:     cm.Data[flotillav1.RegistryMirrorCredentialsSecretKey],
		PlainHTTP:             cm.Data[flotillav1.RegistryMirrorPlainHTTPKey] == "true",
		InsecureSkipTLSVerify: cm.Data[flotillav1.RegistryMirrorInsecureSkipTLSVerifyKey] == "true",
	})
}

// Of is the mirror of an object: own (its own setting, resolved with Resolve) when it names
// one, else the management cluster's (ClusterWide); nil when neither is set.
func Of(ctx context.Context, c ctrlclient.Reader, own *Settings) (*registryconn.Mirror, error) {
	if own != nil {
		return Resolve(ctx, c, *own)
	}
	return ClusterWide(ctx, c)
}
