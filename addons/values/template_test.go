package values

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

func testData() Data {
	return Data{
		Cluster: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta2",
			"kind":       "Cluster",
			"metadata": map[string]any{
				"name":      "w1",
				"namespace": "fleet",
				"labels":    map[string]any{"env": "prod"},
			},
			"spec": map[string]any{
				"clusterNetwork": map[string]any{
					"pods": map[string]any{"cidrBlocks": []any{"192.168.0.0/16"}},
				},
			},
		},
		ControlPlane: map[string]any{
			"spec": map[string]any{"version": "v1.36.3"},
		},
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name     string
		template string
		want     string
		wantErr  string
	}{
		{
			name:     "a field of the cluster's content renders",
			template: "clusterName: {{ .Cluster.metadata.name }}",
			want:     "clusterName: w1\n",
		},
		{
			name:     "a label looked up with index renders",
			template: `env: {{ index .Cluster.metadata.labels "env" }}`,
			want:     "env: prod\n",
		},
		{
			name:     "a missing label with index and default takes the default",
			template: `tier: {{ index .Cluster.metadata.labels "tier" | default "gold" }}`,
			want:     "tier: gold\n",
		},
		{
			name:     "a list element of the cluster's network renders",
			template: `cidr: {{ index .Cluster.spec.clusterNetwork.pods.cidrBlocks 0 | quote }}`,
			want:     "cidr: 192.168.0.0/16\n",
		},
		{
			name:     "the control plane's content is there too",
			template: `version: {{ .ControlPlane.spec.version }}`,
			want:     "version: v1.36.3\n",
		},
		{
			name:     "a missing infrastructure cluster is an empty map, not an error",
			template: `infra: {{ len .InfraCluster }}`,
			want:     "infra: 0\n",
		},
		{
			name:     "keys come out sorted whatever order the template writes them in",
			template: "b: 1\na:\n  z: true\n  c: {{ upper \"x\" }}",
			want:     "a:\n  c: X\n  z: true\nb: 1\n",
		},
		{
			name:     "toYaml with nindent embeds a mapping",
			template: "labels:{{ .Cluster.metadata.labels | toYaml | nindent 2 }}",
			want:     "labels:\n  env: prod\n",
		},
		{
			name:     "a template rendering nothing is no values",
			template: "{{/* nothing */}}",
			want:     "",
		},
		{
			name:     "a missing key is an error naming its line and the key",
			template: "a: 1\nb: {{ .Cluster.spec.nope }}",
			wantErr:  `valuesTemplate line 2, column 14: <.Cluster.spec.nope>: map has no entry for key "nope"`,
		},
		{
			name:     "a template that does not parse is an error naming its line",
			template: "a: 1\nb: 2\nc: {{ .Cluster.metadata.name }",
			wantErr:  "valuesTemplate line 3: unexpected \"}\" in operand",
		},
		{
			name:     "the environment is not reachable",
			template: `home: {{ env "HOME" }}`,
			wantErr:  `valuesTemplate line 1: function "env" not defined`,
		},
		{
			name:     "expandenv is not reachable",
			template: `home: {{ expandenv "$HOME" }}`,
			wantErr:  `function "expandenv" not defined`,
		},
		{
			name:     "the network is not reachable",
			template: `ip: {{ getHostByName "example.com" }}`,
			wantErr:  `function "getHostByName" not defined`,
		},
		{
			name:     "the clock is not reachable",
			template: `t: {{ now }}`,
			wantErr:  `function "now" not defined`,
		},
		{
			name:     "randomness is not reachable",
			template: `p: {{ randAlphaNum 8 }}`,
			wantErr:  `function "randAlphaNum" not defined`,
		},
		{
			name:     "key generation is not reachable",
			template: `k: {{ genPrivateKey "rsa" }}`,
			wantErr:  `function "genPrivateKey" not defined`,
		},
		{
			name:     "output that is not a YAML mapping is an error",
			template: `- {{ .Cluster.metadata.name }}`,
			wantErr:  "the rendered valuesTemplate is not a YAML mapping",
		},
		{
			name: "output beyond the size limit stops the template",
			// (100 bytes a turn over an integer, allocating nothing: the limit is met after 10,000
			// turns, well within the time limit even on a busy machine)
			template: `big: {{ range 2000000 }}` + strings.Repeat("x", 100) + `{{ end }}`,
			wantErr:  "exceed 1048576 bytes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Render(context.Background(), tt.template, testData())
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestRenderIsRepeatable(t *testing.T) {
	g := NewWithT(t)
	tmpl := "a: {{ .Cluster.metadata.name | sha256sum }}\nlist: {{ list 3 1 2 | sortAlpha | toJson }}"
	first, err := Render(context.Background(), tmpl, testData())
	g.Expect(err).NotTo(HaveOccurred())
	for range 5 {
		g.Expect(Render(context.Background(), tmpl, testData())).To(Equal(first))
	}
}

func TestFunctionsLeaveOutWhatIsNotRepeatable(t *testing.T) {
	g := NewWithT(t)
	f := Functions()
	for _, name := range []string{"env", "expandenv", "getHostByName", "now", "date", "ago", "randInt", "uuidv4", "genCA", "encryptAES"} {
		g.Expect(f).NotTo(HaveKey(name), name)
	}
	for _, name := range []string{"toYaml", "fromYaml", "toJson", "default", "quote", "nindent", "b64enc", "sha256sum"} {
		g.Expect(f).To(HaveKey(name), name)
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name   string
		layers []map[string]any
		want   map[string]any
	}{
		{
			name:   "a later layer's scalar wins",
			layers: []map[string]any{{"a": 1}, {"a": 2}},
			want:   map[string]any{"a": 2},
		},
		{
			name:   "nested mappings merge key by key",
			layers: []map[string]any{{"m": map[string]any{"x": 1, "y": 1}}, {"m": map[string]any{"y": 2, "z": 3}}},
			want:   map[string]any{"m": map[string]any{"x": 1, "y": 2, "z": 3}},
		},
		{
			name:   "a list replaces a list",
			layers: []map[string]any{{"l": []any{1, 2}}, {"l": []any{3}}},
			want:   map[string]any{"l": []any{3}},
		},
		{
			name:   "no layers are no values",
			layers: nil,
			want:   map[string]any{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Merge(tt.layers...)).To(Equal(tt.want))
		})
	}
}

func TestMergeLeavesItsInputsAlone(t *testing.T) {
	g := NewWithT(t)
	base := map[string]any{"m": map[string]any{"x": 1}}
	Merge(base, map[string]any{"m": map[string]any{"x": 2}})
	g.Expect(base).To(Equal(map[string]any{"m": map[string]any{"x": 1}}))
}

func TestATemplateParsedOnceRendersEachClustersValuesConcurrently(t *testing.T) {
	g := NewWithT(t)
	const text = "name: {{ .Cluster.metadata.name }}\n"
	var wg sync.WaitGroup
	got := make([]string, 20)
	errs := make([]error, 20)
	for i := range got {
		wg.Go(func() {
			data := Data{Cluster: map[string]any{"metadata": map[string]any{"name": fmt.Sprintf("w%d", i)}}}
			got[i], errs[i] = Render(context.Background(), text, data)
		})
	}
	wg.Wait()
	for i := range got {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		g.Expect(got[i]).To(Equal(fmt.Sprintf("name: w%d\n", i)))
	}
}
