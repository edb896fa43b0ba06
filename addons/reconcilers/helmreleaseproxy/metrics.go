package helmreleaseproxy

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/pkg/latest"
)

// The metrics of the reconciler, registered with controller-runtime's registry (served on the
// manager's metrics endpoint). Reconcile durations are controller-runtime's own
// controller_runtime_reconcile_time_seconds{controller="helmreleaseproxy"}.
var (
	// driftCorrections counts the objects drift correction restored.
	driftCorrections = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_addons_drift_corrections_total",
		Help: "Objects of Helm releases restored by drift correction, by namespace and HelmChartProxy.",
	}, []string{"namespace", "helmchartproxy"})

	// helmActions counts the Helm actions the reconciler performed, by action and result.
	helmActions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "flotilla_addons_helm_actions_total",
		Help: "Helm actions the HelmReleaseProxy reconciler performed on workload clusters, by action (install, upgrade, uninstall) and result (success, error).",
	}, []string{"action", "result"})

	releasesDesc = prometheus.NewDesc("flotilla_addons_releases",
		"HelmReleaseProxies by state: Ready, or the reason of their Ready condition.", []string{"state"}, nil)

	registerOnce sync.Once
)

// registerMetrics registers the metrics once per process; the releases gauge reads
// HelmReleaseProxies through c (the manager's cache, the last one set up) at scrape time.
func registerMetrics(c ctrlclient.Reader) {
	releases.c.Set(c)
	registerOnce.Do(func() {
		metrics.Registry.MustRegister(driftCorrections, helmActions, releases)
	})
}

// countAction counts one Helm action.
func countAction(action string, err error) {
	result := "success"
	if err != nil {
		result = "error"
	}
	helmActions.WithLabelValues(action, result).Inc()
}

// releasesCollector reports how many HelmReleaseProxies are in which state.
type releasesCollector struct {
	// c is the cache of the newest manager.
	c latest.Value[ctrlclient.Reader]
}

// releases is the process's releases gauge.
var releases = &releasesCollector{}

func (rc *releasesCollector) Describe(ch chan<- *prometheus.Desc) { ch <- releasesDesc }

func (rc *releasesCollector) Collect(ch chan<- prometheus.Metric) {
	c, ok := rc.c.Get()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &addonsv1.HelmReleaseProxyList{}
	if err := c.List(ctx, list); err != nil {
		return
	}
	counts := map[string]int{}
	for i := range list.Items {
		state := "Unknown"
		if c := meta.FindStatusCondition(list.Items[i].Status.Conditions, addonsv1.ReadyCondition); c != nil {
			state = c.Reason
			if c.Status == metav1.ConditionTrue {
				state = addonsv1.ReadyReason
			}
		}
		counts[state]++
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(releasesDesc, prometheus.GaugeValue, float64(n), state)
	}
}
