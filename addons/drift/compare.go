package drift

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

// Compare returns the JSON pointers of the fields desired sets that live does not hold with the
// same value, sorted; none when live matches. Fields under an ignored pointer are skipped.
func Compare(desired, live map[string]any, ignored []string) []string {
	var diffs []string
	walk(desired, live, "", ignored, &diffs)
	sort.Strings(diffs)
	return diffs
}

func walk(desired, live any, path string, ignored []string, diffs *[]string) {
	if isIgnored(path, ignored) {
		return
	}
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			if len(d) == 0 && live == nil {
				return // an empty mapping the API server drops
			}
			*diffs = append(*diffs, pointerOrRoot(path))
			return
		}
		for k, dv := range d {
			walk(dv, l[k], path+"/"+escape(k), ignored, diffs)
		}
	case []any:
		l, ok := live.([]any)
		if !ok {
			if len(d) == 0 && live == nil {
				return
			}
			*diffs = append(*diffs, pointerOrRoot(path))
			return
		}
		if len(l) != len(d) {
			*diffs = append(*diffs, pointerOrRoot(path))
			return
		}
		for i := range d {
			walk(d[i], l[i], path+"/"+strconv.Itoa(i), ignored, diffs)
		}
	case nil:
		// A null in the manifest declares nothing.
	default:
		if !scalarEqual(d, live) {
			*diffs = append(*diffs, pointerOrRoot(path))
		}
	}
}

// scalarEqual compares scalars as JSON does: numbers by value whatever their Go type.
func scalarEqual(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && (fa == fb || math.Abs(fa-fb) < 1e-9)
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case int64:
		return float64(n), true
	case float32:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

func isIgnored(path string, ignored []string) bool {
	for _, p := range ignored {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

func pointerOrRoot(path string) string {
	if path == "" {
		return "/"
	}
	return path
}

// escape escapes a key for a JSON pointer (RFC 6901).
func escape(k string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
}

// IgnoredPaths returns the JSON pointers rules ignore for obj; whole is true when a rule
// without paths ignores the object altogether.
func IgnoredPaths(obj *unstructured.Unstructured, rules []addonsv1.DriftIgnoreRule) (paths []string, whole bool) {
	for _, r := range rules {
		if r.Kind != obj.GetKind() || (r.Name != "" && r.Name != obj.GetName()) {
			continue
		}
		if len(r.Paths) == 0 {
			return nil, true
		}
		paths = append(paths, r.Paths...)
	}
	return paths, false
}

// withoutPaths returns a copy of obj without the fields at the pointers.
func withoutPaths(obj *unstructured.Unstructured, pointers []string) (*unstructured.Unstructured, error) {
	out := obj.DeepCopy()
	for _, p := range pointers {
		fields, err := parsePointer(p)
		if err != nil {
			return nil, err
		}
		unstructured.RemoveNestedField(out.Object, fields...)
	}
	return out, nil
}

// parsePointer splits a JSON pointer into its unescaped keys.
func parsePointer(p string) ([]string, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf("ignore path %q is not a JSON pointer (it must start with /)", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, part := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
	}
	return parts, nil
}
