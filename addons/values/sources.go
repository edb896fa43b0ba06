package values

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// FromSources reads the values of refs (ConfigMaps and Secrets in namespace) and merges them in
// order. A missing object or key is an error naming it unless the reference is optional. The
// errors never contain the values themselves.
func FromSources(ctx context.Context, c ctrlclient.Reader, namespace string, refs []addonsv1.ValuesReference) (map[string]any, error) {
	layers := make([]map[string]any, 0, len(refs))
	for i, ref := range refs {
		key := ref.Key
		if key == "" {
			key = addonsv1.DefaultValuesKey
		}
		text, err := read(ctx, c, namespace, ref.Kind, ref.Name, key)
		if errors.Is(err, errMissing) && ref.Optional {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("valuesFrom[%d]: %w", i, err)
		}
		v, err := Parse(text)
		if err != nil {
			return nil, fmt.Errorf("valuesFrom[%d]: key %q of %s %s/%s is not a YAML mapping: %w", i, key, ref.Kind, namespace, ref.Name, err)
		}
		layers = append(layers, v)
	}
	return Merge(layers...), nil
}

// FromTenants reads the tenant values of proxy's release in cluster (ReleaseSpec.tenantValues):
// the key values.yaml of the ConfigMaps of namespace labelled addons.flotilla.dev/values-for=
// <proxy>, and of its Secrets <proxy>-values and <proxy>-values-<cluster>, merged in order: first
// those for every cluster (ConfigMaps without a cluster label, the Secret <proxy>-values), then
// those for this one (ConfigMaps labelled cluster.x-k8s.io/cluster-name=<cluster>, the Secret
// <proxy>-values-<cluster>); ConfigMaps labelled for other clusters are left out. Each group is
// in name order, a ConfigMap before a Secret of the same name. Secrets are read by name, never
// listed: the addons component may not list Secrets (docs/security.md). A source without the
// key, or whose key is no YAML mapping, is an error naming it.
func FromTenants(ctx context.Context, c ctrlclient.Reader, namespace, proxy, cluster string) (map[string]any, error) {
	type source struct {
		kind          addonsv1.ValuesSourceKind
		name          string
		forCluster    bool
		text          string
		hasValuesYAML bool
	}
	var sources []source
	// add keeps the sources for every cluster and for this one.
	add := func(kind addonsv1.ValuesSourceKind, meta metav1.ObjectMeta, text string, ok bool) {
		on := meta.Labels[clusterv1.ClusterNameLabel]
		if on == "" || on == cluster {
			sources = append(sources, source{kind, meta.Name, on != "", text, ok})
		}
	}
	sel := ctrlclient.MatchingLabels{addonsv1.TenantValuesLabel: proxy}
	configMaps := &corev1.ConfigMapList{}
	if err := c.List(ctx, configMaps, ctrlclient.InNamespace(namespace), sel); err != nil {
		return nil, fmt.Errorf("listing the tenant values ConfigMaps of %s/%s: %w", namespace, proxy, err)
	}
	for _, cm := range configMaps.Items {
		text, ok := cm.Data[addonsv1.DefaultValuesKey]
		add(addonsv1.ConfigMapValues, cm.ObjectMeta, text, ok)
	}
	for _, name := range []struct {
		name       string
		forCluster bool
	}{{TenantSecretName(proxy, ""), false}, {TenantSecretName(proxy, cluster), true}} {
		secret := &corev1.Secret{}
		err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name.name}, secret)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the tenant values Secret %s/%s: %w", namespace, name.name, err)
		}
		b, ok := secret.Data[addonsv1.DefaultValuesKey]
		sources = append(sources, source{addonsv1.SecretValues, name.name, name.forCluster, string(b), ok})
	}
	slices.SortFunc(sources, func(a, b source) int {
		return cmp.Or(compareBool(a.forCluster, b.forCluster), strings.Compare(a.name, b.name), strings.Compare(string(a.kind), string(b.kind)))
	})
	layers := make([]map[string]any, 0, len(sources))
	for _, src := range sources {
		if !src.hasValuesYAML {
			return nil, fmt.Errorf("tenant values %s %s/%s has no key %q", src.kind, namespace, src.name, addonsv1.DefaultValuesKey)
		}
		v, err := Parse(src.text)
		if err != nil {
			return nil, fmt.Errorf("tenant values: key %q of %s %s/%s is not a YAML mapping: %w", addonsv1.DefaultValuesKey, src.kind, namespace, src.name, err)
		}
		layers = append(layers, v)
	}
	return Merge(layers...), nil
}

// TenantSecretName is the name of the Secret whose values.yaml holds the tenant values of
// proxy's releases: <proxy>-values for every cluster of the namespace (cluster empty), and
// <proxy>-values-<cluster> for one cluster.
func TenantSecretName(proxy, cluster string) string {
	if cluster == "" {
		return proxy + "-values"
	}
	return proxy + "-values-" + cluster
}

// compareBool orders false before true.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// errMissing is wrapped by read's error when the object or its key does not exist.
var errMissing = errors.New("not found")

// read returns the text under key of the ConfigMap or Secret.
func read(ctx context.Context, c ctrlclient.Reader, namespace string, kind addonsv1.ValuesSourceKind, name, key string) (string, error) {
	var obj ctrlclient.Object
	switch kind {
	case addonsv1.ConfigMapValues:
		obj = &corev1.ConfigMap{}
	case addonsv1.SecretValues:
		obj = &corev1.Secret{}
	default:
		return "", fmt.Errorf("kind %q is neither ConfigMap nor Secret", kind)
	}
	if err := c.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("%s %s/%s %w", kind, namespace, name, errMissing)
		}
		return "", fmt.Errorf("reading %s %s/%s: %w", kind, namespace, name, err)
	}
	var (
		text string
		ok   bool
	)
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		text, ok = o.Data[key]
	case *corev1.Secret:
		var b []byte
		b, ok = o.Data[key]
		text = string(b)
	}
	if !ok {
		return "", fmt.Errorf("key %q of %s %s/%s %w", key, kind, namespace, name, errMissing)
	}
	return text, nil
}
