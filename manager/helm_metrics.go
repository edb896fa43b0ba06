package manager

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/flotilla-dev/flotilla/pkg/helm"
	"github.com/flotilla-dev/flotilla/pkg/latest"
)

// engineOperationsDesc describes the counters of the manager's Helm engine (helm.Stats), which
// the packages and addons components share: chart pulls and cache hits show whether a resync
// downloaded anything, the release outcomes whether it changed anything.
var engineOperationsDesc = prometheus.NewDesc("flotilla_helm_engine_operations_total",
	"Operations of the manager's Helm engine since the manager started, by operation: chart_pull, chart_cache_hit, source_lookup, install, upgrade, unchanged, uninstall, recovery.",
	[]string{"operation"}, nil)

// engineMetrics serves the counters of the engine of the newest Manager of the process on
// controller-runtime's registry (the manager's metrics endpoint); registered once.
var (
	engineMetrics         = &engineCollector{}
	registerEngineMetrics sync.Once
)

// reportEngine makes engine the one whose counters the metrics endpoint serves.
func reportEngine(engine *helm.Engine) {
	engineMetrics.engine.Set(engine)
	registerEngineMetrics.Do(func() { metrics.Registry.MustRegister(engineMetrics) })
}

// engineCollector reads an engine's counters at scrape time.
type engineCollector struct{ engine latest.Value[*helm.Engine] }

func (c *engineCollector) Describe(ch chan<- *prometheus.Desc) { ch <- engineOperationsDesc }

func (c *engineCollector) Collect(ch chan<- prometheus.Metric) {
	engine, ok := c.engine.Get()
	if !ok {
		return
	}
	s := engine.Stats()
	for operation, n := range map[string]int64{
		"chart_pull":      s.ChartPulls,
		"chart_cache_hit": s.ChartCacheHits,
		"source_lookup":   s.SourceLookups,
		"install":         s.Installs,
		"upgrade":         s.Upgrades,
		"unchanged":       s.Unchanged,
		"uninstall":       s.Uninstalls,
		"recovery":        s.Recoveries,
	} {
		ch <- prometheus.MustNewConstMetric(engineOperationsDesc, prometheus.CounterValue, float64(n), operation)
	}
}
