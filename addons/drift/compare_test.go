package drift

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
)

func deployment(replicas any, image string) map[string]any {
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{
			"replicas": replicas,
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "web", "image": image},
			}}},
		},
	}
}

func TestCompare(t *testing.T) {
	live := deployment(int64(1), "web:1")
	live["status"] = map[string]any{"readyReplicas": int64(1)}
	live["metadata"].(map[string]any)["labels"].(map[string]any)["app.kubernetes.io/managed-by"] = "Helm"
	live["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["imagePullPolicy"] = "IfNotPresent"

	tests := []struct {
		name    string
		desired map[string]any
		live    map[string]any
		ignored []string
		want    []string
	}{
		{
			name:    "fields the API server or others added are not drift",
			desired: deployment(1, "web:1"),
			live:    live,
			want:    nil,
		},
		{
			name:    "a changed scalar is drift at its path",
			desired: deployment(2, "web:1"),
			live:    live,
			want:    []string{"/spec/replicas"},
		},
		{
			name:    "a changed field inside a list element is drift at its index",
			desired: deployment(1, "web:2"),
			live:    live,
			want:    []string{"/spec/template/spec/containers/0/image"},
		},
		{
			name:    "an ignored path is not drift",
			desired: deployment(2, "web:1"),
			live:    live,
			ignored: []string{"/spec/replicas"},
			want:    nil,
		},
		{
			name:    "an ignored parent ignores everything under it",
			desired: deployment(2, "web:2"),
			live:    live,
			ignored: []string{"/spec"},
			want:    nil,
		},
		{
			name:    "a list of another length is drift at the list",
			desired: map[string]any{"data": []any{"a", "b"}},
			live:    map[string]any{"data": []any{"a"}},
			want:    []string{"/data"},
		},
		{
			name:    "a missing mapping is drift at the mapping",
			desired: map[string]any{"data": map[string]any{"k": "v"}},
			live:    map[string]any{},
			want:    []string{"/data"},
		},
		{
			name:    "an empty mapping the server dropped is not drift",
			desired: map[string]any{"data": map[string]any{}},
			live:    map[string]any{},
			want:    nil,
		},
		{
			name:    "numbers compare by value whatever their type",
			desired: map[string]any{"n": 3},
			live:    map[string]any{"n": float64(3)},
			want:    nil,
		},
		{
			name:    "keys with a slash are escaped in the pointer",
			desired: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a/b": "1"}}},
			live:    map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a/b": "2"}}},
			want:    []string{"/metadata/annotations/a~1b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Compare(tt.desired, tt.live, tt.ignored)).To(Equal(tt.want))
		})
	}
}

func TestIgnoredPaths(t *testing.T) {
	obj := &unstructured.Unstructured{Object: deployment(1, "web:1")}
	tests := []struct {
		name      string
		rules     []addonsv1.DriftIgnoreRule
		wantPaths []string
		wantWhole bool
	}{
		{name: "a rule for the kind applies to every object of it", rules: []addonsv1.DriftIgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas"}}}, wantPaths: []string{"/spec/replicas"}},
		{name: "a rule for another name does not apply", rules: []addonsv1.DriftIgnoreRule{{Kind: "Deployment", Name: "db", Paths: []string{"/spec/replicas"}}}},
		{name: "a rule for another kind does not apply", rules: []addonsv1.DriftIgnoreRule{{Kind: "ConfigMap", Paths: []string{"/data"}}}},
		{name: "a rule without paths ignores the whole object", rules: []addonsv1.DriftIgnoreRule{{Kind: "Deployment", Name: "web"}}, wantWhole: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			paths, whole := IgnoredPaths(obj, tt.rules)
			g.Expect(paths).To(Equal(tt.wantPaths))
			g.Expect(whole).To(Equal(tt.wantWhole))
		})
	}
}

func TestWithoutPathsDropsIgnoredFieldsFromWhatIsRestored(t *testing.T) {
	g := NewWithT(t)
	obj := &unstructured.Unstructured{Object: deployment(int64(1), "web:1")}
	out, err := withoutPaths(obj, []string{"/spec/replicas"})
	g.Expect(err).NotTo(HaveOccurred())
	_, found, _ := unstructured.NestedFieldNoCopy(out.Object, "spec", "replicas")
	g.Expect(found).To(BeFalse())
	_, found, _ = unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas")
	g.Expect(found).To(BeTrue(), "the manifest object is left alone")

	_, err = withoutPaths(obj, []string{"spec/replicas"})
	g.Expect(err).To(MatchError(ContainSubstring("not a JSON pointer")))
}
