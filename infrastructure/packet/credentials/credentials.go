package credentials

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/flotilla-dev/flotilla/api/infrastructure/v1alpha1"
	"github.com/flotilla-dev/flotilla/infrastructure/packet/metal"
)

// ErrUnavailable is wrapped by errors about a missing identity, Secret or key: waiting (for an
// admin to create it) is the remedy, not retrying fast.
var ErrUnavailable = errors.New("the Metal API credentials are unavailable")

// ErrNotAllowed is wrapped by errors about an identity that may not be used where it is named:
// it does not allow the namespace, or would send its key in the clear. An admin has to change
// the identity; no request is made with its key meanwhile.
var ErrNotAllowed = errors.New("the PacketClusterIdentity may not be used here")

// NewClientFunc builds a Metal API client for a base URL and key.
type NewClientFunc func(apiURL, apiKey string) (metal.Interface, error)

// NewMetalClient is the NewClientFunc of the real ctrlclient.
func NewMetalClient(apiURL, apiKey string) (metal.Interface, error) {
	return metal.New(metal.Options{BaseURL: apiURL, APIKey: apiKey})
}

// IdentityName is the name of the PacketClusterIdentity ref names:
// infrav1.DefaultPacketClusterIdentity when ref names none.
func IdentityName(ref *infrav1.PacketClusterIdentityReference) string {
	if ref == nil || ref.Name == "" {
		return infrav1.DefaultPacketClusterIdentity
	}
	return ref.Name
}

// APIURL is the Metal API root identity sends its key to.
func APIURL(identity *infrav1.PacketClusterIdentity) string {
	if identity.Spec.APIURL != "" {
		return identity.Spec.APIURL
	}
	return infrav1.DefaultPacketAPIURL
}

// Allows returns nil when identity lets the clusters of namespace ns use it (see
// PacketClusterIdentitySpec.AllowedNamespaces), or an error wrapping ErrNotAllowed that names the
// identity, the namespace and the rule.
func Allows(identity *infrav1.PacketClusterIdentity, ns *corev1.Namespace) error {
	allowed := identity.Spec.AllowedNamespaces
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: PacketClusterIdentity %q does not allow namespace %q: %s; an admin may change its spec.allowedNamespaces",
			ErrNotAllowed, identity.Name, ns.Name, fmt.Sprintf(format, args...))
	}
	switch {
	case allowed == nil:
		return refuse("it has no spec.allowedNamespaces, so it allows no namespace")
	case len(allowed.List) == 0 && allowed.Selector == nil:
		return nil // {}: every namespace
	case slices.Contains(allowed.List, ns.Name):
		return nil
	}
	if allowed.Selector != nil {
		selector, err := metav1.LabelSelectorAsSelector(allowed.Selector)
		if err != nil {
			return refuse("its spec.allowedNamespaces.selector is invalid (%v)", err)
		}
		if selector.Matches(labels.Set(ns.Labels)) {
			return nil
		}
	}
	var rules []string
	if len(allowed.List) > 0 {
		rules = append(rules, fmt.Sprintf("spec.allowedNamespaces.list names %s", strings.Join(allowed.List, ", ")))
	}
	if allowed.Selector != nil {
		rules = append(rules, fmt.Sprintf("the namespace's labels do not match spec.allowedNamespaces.selector (%s)",
			metav1.FormatLabelSelector(allowed.Selector)))
	}
	return refuse("%s", strings.Join(rules, ", and "))
}

// ClientFor returns a client of the Metal API for pc: the API and the key of the
// PacketClusterIdentity pc names, once the identity allows pc's namespace and its API URL keeps
// the key off the network in the clear. Nothing is sent, and the key's Secret is not even read,
// before both hold. reader reads past the cache (the manager caches no Secret).
func ClientFor(ctx context.Context, reader ctrlclient.Reader, newClient NewClientFunc, pc *infrav1.PacketCluster) (metal.Interface, error) {
	name := IdentityName(pc.Spec.IdentityRef)
	identity := &infrav1.PacketClusterIdentity{}
	if err := reader.Get(ctx, ctrlclient.ObjectKey{Name: name}, identity); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: PacketClusterIdentity %q does not exist; an admin creates it (see docs/packet-provider.md)", ErrUnavailable, name)
		}
		return nil, fmt.Errorf("reading PacketClusterIdentity %s: %w", name, err)
	}
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, ctrlclient.ObjectKey{Name: pc.Namespace}, ns); err != nil {
		return nil, fmt.Errorf("reading namespace %s: %w", pc.Namespace, err)
	}
	if err := Allows(identity, ns); err != nil {
		return nil, err
	}
	apiURL := APIURL(identity)
	if err := metal.CheckBaseURL(apiURL); err != nil {
		return nil, fmt.Errorf("%w: PacketClusterIdentity %q: spec.apiURL: %w", ErrNotAllowed, name, err)
	}
	secretName := identity.Spec.CredentialsSecretName
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, ctrlclient.ObjectKey{Namespace: infrav1.PacketCredentialsNamespace, Name: secretName}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%w: Secret %s/%s of PacketClusterIdentity %q does not exist", ErrUnavailable, infrav1.PacketCredentialsNamespace, secretName, name)
		}
		return nil, fmt.Errorf("reading Secret %s/%s: %w", infrav1.PacketCredentialsNamespace, secretName, err)
	}
	key := string(secret.Data[infrav1.PacketAPIKeySecretKey])
	if key == "" {
		return nil, fmt.Errorf("%w: Secret %s/%s of PacketClusterIdentity %q has no %q", ErrUnavailable, infrav1.PacketCredentialsNamespace, secretName, name, infrav1.PacketAPIKeySecretKey)
	}
	c, err := newClient(apiURL, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return c, nil
}
