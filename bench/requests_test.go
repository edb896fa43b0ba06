package bench

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
)

// requestCounts are the manager's client requests so far, by API server host and HTTP method.
type requestCounts map[string]map[string]float64

// metricsScrape is what benchmarks read from the manager's metrics endpoint.
type metricsScrape struct {
	// requests: client-go's rest_client_requests_total, by host and method.
	requests requestCounts
	// engine: flotilla_helm_engine_operations_total, by operation.
	engine map[string]float64
	// queued: the items waiting in, or being worked on from, every controller's work queue
	// (workqueue_depth plus workqueue_unfinished_work_seconds, which is non-zero while one is).
	queued float64
	// added: workqueue_adds_total, by controller.
	added map[string]float64
}

// sample matches one Prometheus text-format sample with labels: name, labels, value.
var sample = regexp.MustCompile(`^(\w+)\{([^}]*)\} ([0-9.e+-]+)$`)

var label = regexp.MustCompile(`(\w+)="([^"]*)"`)

// managerMetrics scrapes the metrics endpoint of mgmt's manager, as the CLI reads it.
func managerMetrics(b *testing.B, home string) metricsScrape {
	b.Helper()
	c, err := client.New(home, binaries.DefaultRoot(), io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	data, err := c.ManagerMetrics(b.Context(), "mgmt")
	if err != nil {
		b.Fatal(err)
	}
	m := metricsScrape{requests: requestCounts{}, engine: map[string]float64{}, added: map[string]float64{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		s := sample.FindStringSubmatch(sc.Text())
		if s == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range label.FindAllStringSubmatch(s[2], -1) {
			labels[l[1]] = l[2]
		}
		v, err := strconv.ParseFloat(s[3], 64)
		if err != nil {
			b.Fatal(err)
		}
		switch s[1] {
		case "rest_client_requests_total":
			if m.requests[labels["host"]] == nil {
				m.requests[labels["host"]] = map[string]float64{}
			}
			m.requests[labels["host"]][labels["method"]] += v
		case "flotilla_helm_engine_operations_total":
			m.engine[labels["operation"]] = v
		case "workqueue_depth", "workqueue_unfinished_work_seconds":
			m.queued += v
		case "workqueue_adds_total":
			m.added[labels["controller"]] += v
		}
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return m
}

// workloadRequests compares two scrapes of requests: the requests to the busiest of the
// workload clusters names, and the writes (every method but GET) to all of them.
func workloadRequests(b *testing.B, kc ctrlclient.Client, names []string, before, after requestCounts) (busiest, writes float64) {
	b.Helper()
	if len(names) == 0 {
		b.Fatal("no workload clusters to watch")
	}
	for _, name := range names {
		u, err := url.Parse(workloadConfig(b, kc, name).Host)
		if err != nil {
			b.Fatal(err)
		}
		var total float64
		for method, n := range after[u.Host] {
			delta := n - before[u.Host][method]
			total += delta
			if method != http.MethodGet {
				writes += delta
			}
		}
		busiest = max(busiest, total)
	}
	return busiest, writes
}

// workloadConfig returns the REST config of workload cluster name, from its kubeconfig Secret.
func workloadConfig(b *testing.B, kc ctrlclient.Client, name string) *rest.Config {
	b.Helper()
	s, err := secret.GetFromNamespacedName(b.Context(), kc, ctrlclient.ObjectKey{Namespace: "default", Name: name}, secret.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[secret.KubeconfigDataName])
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}
