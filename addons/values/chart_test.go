package values

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/chart/common"

	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/internal/proctest"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// chartRender is a render of a chart whose one template is template.
func chartRender(t *testing.T, template string) helm.ChartRender {
	chart := charttest.Chart{Name: "hostile", Version: "0.1.0", Files: map[string]string{
		"Chart.yaml":               "apiVersion: v2\nname: hostile\nversion: 0.1.0\n",
		"templates/configmap.yaml": template,
	}}
	return helm.ChartRender{
		Archive:      charttest.Package(t, chart),
		Values:       []byte(`{"greeting":"ahoy"}`),
		Release:      common.ReleaseOptions{Name: "web", Namespace: "apps", Revision: 1, IsInstall: true},
		Capabilities: *common.DefaultCapabilities.Copy(),
	}
}

// stopChartWorkers stops the chart workers once the test is over, so that the tests of values
// templates count their own workers only.
func stopChartWorkers(t *testing.T) {
	t.Cleanup(func() {
		g := NewWithT(t)
		g.Eventually(func() int { return goroutinesIn("values.(*pool).replace") }, 10*time.Second).Should(BeZero())
		for w := chartWorkers.take(); w != nil; w = chartWorkers.take() {
			w.stop()
		}
		g.Eventually(func() int { return goroutinesIn("values.startWorker.func") }, 10*time.Second).Should(Equal(idleWorkers()))
	})
}

// A chart renders in a worker to what it renders to in this process.
func TestAChartRendersInAWorkerAsInThisProcess(t *testing.T) {
	stopChartWorkers(t)
	g := NewWithT(t)
	r := chartRender(t, "kind: ConfigMap\ndata:\n  greeting: {{ .Values.greeting }}\n  release: {{ .Release.Name }}-{{ .Release.Revision }}\n")
	got, err := ChartRenderer{}.RenderChart(context.Background(), r)
	g.Expect(err).NotTo(HaveOccurred())
	want, err := helm.RenderChart(r)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(want))
	g.Expect(got).To(HaveKeyWithValue("hostile/templates/configmap.yaml", "kind: ConfigMap\ndata:\n  greeting: ahoy\n  release: web-1\n"))
}

// Runaway chart templates are stopped at a limit, the error says which, and the next chart
// renders.
func TestRunawayChartTemplatesAreStoppedAtALimit(t *testing.T) {
	stopChartWorkers(t)
	tests := []struct {
		name, template string
		// memory: the template allocates; it may meet either limit first.
		memory bool
	}{
		{name: "until allocating a slice of two billion ints", template: `{{ range $i := until 2000000000 }}x{{ end }}`, memory: true},
		{name: "a string doubled forty times", template: `{{ $s := "x" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}a: {{ len $s }}`, memory: true},
		{name: "ranges nested four deep with empty bodies", template: `{{ range until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ range until 1000 }}{{ end }}{{ end }}{{ end }}{{ end }}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			start := time.Now()
			_, err := ChartRenderer{}.RenderChart(context.Background(), chartRender(t, tt.template))
			if tt.memory {
				g.Expect(err).To(Or(MatchError(ErrChartRenderMemoryLimit), MatchError(ErrChartRenderTimeLimit), MatchError(ErrChartRenderStarved)))
			} else {
				g.Expect(err).To(Or(MatchError(ErrChartRenderTimeLimit), MatchError(ErrChartRenderStarved)))
			}
			g.Expect(time.Since(start)).To(BeNumerically("<", ChartRenderTimeLimit+5*time.Second))

			files, err := ChartRenderer{}.RenderChart(context.Background(), chartRender(t, "a: {{ .Values.greeting }}\n"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(files).To(HaveKeyWithValue("hostile/templates/configmap.yaml", "a: ahoy\n"))
			g.Eventually(func() int { return len(proctest.Children(t, workerArg)) }, 10*time.Second).
				Should(BeNumerically("<=", renderWorkers+chartRenderWorkers), "no worker is left running away")
		})
	}
}
