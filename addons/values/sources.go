package values

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
