package client

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestReadObjects(t *testing.T) {
	tests := []struct {
		name      string
		content   string
		wantKinds []string
		wantErr   string
	}{
		{
			name:      "documents separated by --- are read in order, empty ones skipped",
			content:   "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\napiVersion: addons.flotilla.dev/v1alpha1\nkind: HelmChartProxy\nmetadata: {name: b}\n",
			wantKinds: []string{"ConfigMap", "HelmChartProxy"},
		},
		{
			name:      "JSON is read too",
			content:   `{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}`,
			wantKinds: []string{"Namespace"},
		},
		{
			name:    "a document without a name says which one",
			content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\n",
			wantErr: "document 2: apiVersion, kind and metadata.name are required",
		},
		{
			name:    "a document that is not YAML says which one",
			content: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n: [\n",
			wantErr: "document 2:",
		},
		{
			name:    "a file without objects is refused",
			content: "# nothing here\n",
			wantErr: "holds no object",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			file := filepath.Join(t.TempDir(), "objects.yaml")
			g.Expect(os.WriteFile(file, []byte(tt.content), 0o600)).To(Succeed())
			objs, err := readObjects(file)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			kinds := []string{}
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
			}
			g.Expect(kinds).To(Equal(tt.wantKinds))
		})
	}
}
