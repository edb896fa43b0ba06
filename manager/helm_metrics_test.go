package manager

import (
	"testing"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// The engine's counters reach the metrics endpoint's registry: a chart resolved twice is one pull
// and one cache hit, read at scrape time from the engine the newest manager reports.
func TestEngineMetricsCountPullsAndCacheHits(t *testing.T) {
	g := NewWithT(t)
	host, stop := charttest.StartRegistry()
	defer stop()
	charttest.Push(t, host+"/charts", charttest.Hello("0.1.0"))

	reportEngine(&helm.Engine{ChartCache: t.TempDir()}) // an older manager's engine, replaced below
	engine := &helm.Engine{ChartCache: t.TempDir()}
	reportEngine(engine)
	ref := helm.ChartRef{RepoURL: "oci://" + host + "/charts", Name: "hello", Version: "0.1.0"}
	for range 2 {
		_, err := engine.ChartInfo(t.Context(), ref, registryconn.Config{PlainHTTP: true})
		g.Expect(err).NotTo(HaveOccurred())
	}

	g.Expect(engineOperations(t)).To(And(
		HaveKeyWithValue("chart_pull", 1.0),
		HaveKeyWithValue("chart_cache_hit", 1.0),
		HaveKeyWithValue("install", 0.0),
	))
}

// engineOperations gathers flotilla_helm_engine_operations_total by operation.
func engineOperations(t *testing.T) map[string]float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "flotilla_helm_engine_operations_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			ops[label(m, "operation")] = m.GetCounter().GetValue()
		}
	}
	return ops
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
