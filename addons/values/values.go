package values

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// Parse reads values from YAML. Empty text is no values; anything but a mapping is an error
// naming the line.
func Parse(text string) (map[string]any, error) {
	values := map[string]any{}
	if err := yaml.Unmarshal([]byte(text), &values); err != nil {
		return nil, err
	}
	if values == nil { // "null" or only comments
		values = map[string]any{}
	}
	return values, nil
}

// Encode writes values as canonical YAML with sorted keys; no values encode as "".
func Encode(values map[string]any) (string, error) {
	if len(values) == 0 {
		return "", nil
	}
	b, err := yaml.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("encoding values: %w", err)
	}
	return string(b), nil
}

// Merge returns the values of layers laid over each other in order: a later layer's key wins,
// except that two mappings under the same key merge key by key, as Helm merges values files. The
// layers are not modified.
func Merge(layers ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, l := range layers {
		out = mergeInto(out, l)
	}
	return out
}

func mergeInto(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			if dv, ok := dst[k].(map[string]any); ok {
				dst[k] = mergeInto(copyMap(dv), sv)
				continue
			}
			dst[k] = mergeInto(map[string]any{}, sv)
			continue
		}
		dst[k] = v
	}
	return dst
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
