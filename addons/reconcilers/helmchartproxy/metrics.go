package helmchartproxy

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/latest"
)

var (
	rolloutDesc = prometheus.NewDesc("flotilla_addons_rollout_clusters",
		"Clusters of each HelmChartProxy's progressive rollout, by state: updated (given the current generation), failed, total (selected).",
		[]string{"namespace", "helmchartproxy", "state"}, nil)

	registerOnce sync.Once
)

// registerMetrics registers the rollout gauge once per process; it reads HelmChartProxies
// through c (the manager's cache, the last one set up) at scrape time.
func registerMetrics(c ctrlclient.Reader) {
	rollouts.c.Set(c)
	registerOnce.Do(func() { metrics.Registry.MustRegister(rollouts) })
}

type rolloutCollector struct {
	// c is the cache of the newest manager.
	c latest.Value[ctrlclient.Reader]
}

// rollouts is the process's rollout gauge.
var rollouts = &rolloutCollector{}

func (rc *rolloutCollector) Describe(ch chan<- *prometheus.Desc) { ch <- rolloutDesc }

func (rc *rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	c, ok := rc.c.Get()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &addonsv1.HelmChartProxyList{}
	if err := c.List(ctx, list); err != nil {
		return
	}
	for _, p := range list.Items {
		ro := p.Status.Rollout
		if ro == nil {
			continue
		}
		for state, n := range map[string]int{"updated": len(ro.Updated), "failed": len(ro.Failed), "total": len(p.Status.MatchingClusters)} {
			ch <- prometheus.MustNewConstMetric(rolloutDesc, prometheus.GaugeValue, float64(n), p.Namespace, p.Name, state)
		}
	}
}
