package helm

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// What Helm installs is exactly what the templates rendered to (prerender), braces included:
// a template whose output holds "{{", "}}" and "{{-" (a Grafana dashboard, an Alertmanager
// template), partials, a subchart and the chart's annotations as the templates saw them.
func TestPrerenderedTemplatesInstallAsTheyRendered(t *testing.T) {
	g := NewWithT(t)
	ctx := testContext(t)
	ns := env.NewNamespace(t)
	c := parentChart()
	c.files["templates/_helpers.tpl"] = `{{ define "parent.greeting" }}{{ .Values.child.greeting }}{{ end }}`
	c.files["templates/braces.yaml"] = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-braces
data:
  alert: {{ "'{{ $labels.instance }} is down {{- \"!\" }} }}{{{'" }}
  helper: {{ include "parent.greeting" . | quote }}
  revision: "{{ .Release.Revision }}"
  digest: {{ index .Chart.Annotations "flotilla.dev/chart-digest" | quote }}
`
	digest := c.push(t, "prerender")
	e := newEngine(t)
	rel := Release{Name: "web", Namespace: ns, Registry: registryconn.Config{PlainHTTP: true},
		Chart: ChartRef{RepoURL: "oci://" + ociHost + "/prerender/parent", Version: "1.0.0"}}
	_, err := e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(configMapData(g, ctx, ns, "web-braces")).To(Equal(map[string]string{
		"alert":    `{{ $labels.instance }} is down {{- "!" }} }}{{{`,
		"helper":   "from-parent",
		"revision": "1",
		"digest":   digest,
	}))
	g.Expect(configMapData(g, ctx, ns, "web-child")).To(HaveKeyWithValue("greeting", "from-parent"))

	rel.Values = map[string]any{"child": map[string]any{"greeting": "again"}}
	_, err = e.InstallOrUpgrade(ctx, cluster, rel)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(configMapData(g, ctx, ns, "web-braces")).To(HaveKeyWithValue("revision", "2"))
	g.Expect(configMapData(g, ctx, ns, "web-braces")).To(HaveKeyWithValue("helper", "again"))
}
