package bench

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/cluster-api/util/secret"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// requestCounts are the manager's client requests so far, by API server host and HTTP method.
type requestCounts map[string]map[string]float64

// restClientRequest matches a sample of client-go's rest_client_requests_total, which
// controller-runtime serves at /metrics with code, host and method labels.
var restClientRequest = regexp.MustCompile(`^rest_client_requests_total\{([^}]*)\} ([0-9.e+]+)$`)

var label = regexp.MustCompile(`(\w+)="([^"]*)"`)

// managerRequests scrapes the metrics endpoint of mgmt's manager, as recorded in manager.json.
func managerRequests(b *testing.B, home string) requestCounts {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(home, "clusters", "mgmt", "manager.json"))
	if err != nil {
		b.Fatal(err)
	}
	var endpoints struct {
		Metrics string `json:"metrics"`
	}
	if err := json.Unmarshal(data, &endpoints); err != nil {
		b.Fatal(err)
	}
	resp, err := http.Get("http://" + endpoints.Metrics + "/metrics")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	counts := requestCounts{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := restClientRequest.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range label.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			b.Fatal(err)
		}
		if counts[labels["host"]] == nil {
			counts[labels["host"]] = map[string]float64{}
		}
		counts[labels["host"]][labels["method"]] += v
	}
	if err := sc.Err(); err != nil {
		b.Fatal(err)
	}
	return counts
}

// idleRequests compares two scrapes idleWindow apart: the requests per second to the busiest of
// the workload clusters names, and the writes to all of them.
func idleRequests(b *testing.B, kc ctrlclient.Client, names []string, before, after requestCounts) (busiest, writes float64) {
	b.Helper()
	if len(names) == 0 {
		b.Fatal("no workload clusters to watch")
	}
	for _, name := range names {
		s, err := secret.GetFromNamespacedName(b.Context(), kc, ctrlclient.ObjectKey{Namespace: "default", Name: name}, secret.Kubeconfig)
		if err != nil {
			b.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Data[secret.KubeconfigDataName])
		if err != nil {
			b.Fatal(err)
		}
		u, err := url.Parse(cfg.Host)
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
		busiest = max(busiest, total/idleWindow.Seconds())
	}
	return busiest, writes
}
