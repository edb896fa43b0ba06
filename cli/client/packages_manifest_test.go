package client_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
)

func TestMergeValues(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		set   []string
		want  map[string]any
	}{
		{name: "no input is no config", want: nil},
		{name: "later files win, nested maps merge", files: []string{"a: 1\nsvc:\n  port: 80\n  type: X\n", "svc:\n  port: 81\n"},
			want: map[string]any{"a": float64(1), "svc": map[string]any{"port": float64(81), "type": "X"}}},
		{name: "--set wins over files and makes nested keys", files: []string{"greeting: hi\n"}, set: []string{"greeting=hola", "svc.port=90"},
			want: map[string]any{"greeting": "hola", "svc": map[string]any{"port": float64(90)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			files := make([][]byte, 0, len(tt.files))
			for _, f := range tt.files {
				files = append(files, []byte(f))
			}
			out, err := client.MergeValues(files, tt.set)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == nil {
				g.Expect(out).To(BeEmpty())
				return
			}
			got := map[string]any{}
			g.Expect(yaml.Unmarshal([]byte(out), &got)).To(Succeed())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestMergeValuesRejectsBadInput(t *testing.T) {
	g := NewWithT(t)
	_, err := client.MergeValues([][]byte{[]byte("- a list\n")}, nil)
	g.Expect(err).To(MatchError(ContainSubstring("values file 1 is not a YAML mapping")))
}

func TestPackageManifestIsAnApplicablePackageWithTheSchemaAsComments(t *testing.T) {
	g := NewWithT(t)
	b := &packagesv1.PackageBundle{
		ObjectMeta: metav1.ObjectMeta{Name: "v1-36-1"},
		Spec: packagesv1.PackageBundleSpec{Packages: []packagesv1.BundlePackage{{
			Name: "hello", Description: "a web app",
			Versions: []packagesv1.PackageVersion{{Version: "0.2.0", Schema: `{"type": "object", "required": ["greeting"],
  "properties": {"greeting": {"type": "string", "default": "hello", "description": "what it says"},
  "service": {"type": "object", "properties": {"port": {"type": "integer", "default": 80}}}}}`}},
		}}},
	}
	out, err := client.PackageManifest(b, "w1", "hello", "")
	g.Expect(err).NotTo(HaveOccurred())
	p := &packagesv1.Package{}
	g.Expect(yaml.UnmarshalStrict(out, p)).To(Succeed())
	g.Expect(p.Namespace).To(Equal("flotilla-packages-w1"))
	g.Expect(p.Spec.PackageName).To(Equal("hello"))
	g.Expect(p.Spec.Config).To(ContainSubstring(`# greeting (string, required: what it says)`))
	g.Expect(p.Spec.Config).To(ContainSubstring(`# greeting: "hello"`))
	g.Expect(p.Spec.Config).To(ContainSubstring("  # port: 80"))

	_, err = client.PackageManifest(b, "w1", "nope", "")
	g.Expect(err).To(MatchError(ContainSubstring("has no package nope; it has: hello")))
}
