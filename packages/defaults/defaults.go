package defaults

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
	"github.com/flotilla-dev/flotilla/pkg/registrymirror"
)

// Defaults is the packages configuration of a management cluster.
type Defaults struct {
	// Found is false when the ConfigMap does not exist.
	Found bool
	// Source is the default bundle source, nil when the ConfigMap names none.
	Source *packagesv1.BundleSource
	// PublicKey verifies bundle signatures; nil when none is configured or it does not parse
	// (KeyError says which).
	PublicKey *ecdsa.PublicKey
	KeyError  error
	// PlainHTTP reaches registries over HTTP.
	PlainHTTP bool
	// BundleHistory is how many bundles are kept per source and Kubernetes minor.
	BundleHistory int
	// Username, Password and CAData come from the credentials Secret, when one is named.
	Username, Password string
	CAData             []byte
}

// Key is the ConfigMap's name.
var Key = ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: packagesv1.DefaultsConfigMapName}

// Read reads the ConfigMap and the Secret it names. A missing ConfigMap is not an error.
func Read(ctx context.Context, c ctrlclient.Reader) (Defaults, error) {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, Key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return Defaults{KeyError: errNoKey, BundleHistory: packagesv1.DefaultBundleHistory}, nil
		}
		return Defaults{}, fmt.Errorf("reading ConfigMap %s: %w", Key, err)
	}
	d := Defaults{Found: true, PlainHTTP: cm.Data[packagesv1.DefaultsPlainHTTPKey] == "true", BundleHistory: packagesv1.DefaultBundleHistory}
	if n, err := strconv.Atoi(cm.Data[packagesv1.DefaultsBundleHistoryKey]); err == nil && n > 0 {
		d.BundleHistory = n
	}
	if reg, repo := cm.Data[packagesv1.DefaultsRegistryKey], cm.Data[packagesv1.DefaultsRepositoryKey]; reg != "" && repo != "" {
		d.Source = &packagesv1.BundleSource{Registry: reg, Repository: repo}
	}
	d.PublicKey, d.KeyError = ParsePublicKey([]byte(cm.Data[packagesv1.DefaultsPublicKeyKey]))
	if name := cm.Data[packagesv1.DefaultsCredentialsSecretKey]; name != "" {
		s := &corev1.Secret{}
		if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: name}, s); err != nil {
			return Defaults{}, fmt.Errorf("reading registry credentials Secret %s/%s named in %s: %w", packagesv1.PackagesNamespace, name, Key, err)
		}
		d.Username = string(s.Data[packagesv1.CredentialsUsernameKey])
		d.Password = string(s.Data[packagesv1.CredentialsPasswordKey])
		d.CAData = s.Data[packagesv1.CredentialsCAKey]
	}
	return d, nil
}

var errNoKey = fmt.Errorf("no public key configured: ConfigMap %s has no %s", Key, packagesv1.DefaultsPublicKeyKey)

// ParsePublicKey parses a PEM PKIX ECDSA P-256 public key.
func ParsePublicKey(data []byte) (*ecdsa.PublicKey, error) {
	if len(data) == 0 {
		return nil, errNoKey
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("the public key in ConfigMap %s is not PEM", Key)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing the public key in ConfigMap %s: %w", Key, err)
	}
	key, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return nil, errors.New("the public key in ConfigMap " + Key.String() + " is not an ECDSA key")
	}
	return key, nil
}

// MirrorOf is the registry mirror the bundles and charts of pbc's cluster are pulled through:
// pbc's spec.registryMirror (its credentials Secret in PackagesNamespace), else the management
// cluster's (registrymirror.ClusterWide); nil when neither is set. pbc may be nil.
func MirrorOf(ctx context.Context, c ctrlclient.Reader, pbc *packagesv1.PackageBundleController) (*registryconn.Mirror, error) {
	var own *registrymirror.Settings
	if pbc != nil && pbc.Spec.RegistryMirror != nil {
		m := pbc.Spec.RegistryMirror
		own = &registrymirror.Settings{Field: "spec.registryMirror", Registry: m.Registry, Namespace: packagesv1.PackagesNamespace,
			CredentialsSecret: m.CredentialsSecret, PlainHTTP: m.PlainHTTP, InsecureSkipTLSVerify: m.InsecureSkipTLSVerify}
	}
	return registrymirror.Of(ctx, c, own)
}
