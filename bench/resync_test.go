package bench

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/pkg/process"
)

// benchmarkResync restarts the manager of mgmt, with packages and addons installed on the fleet
// (names: its workload clusters), and counts what the resync of everything that follows does:
//   - resync-workload-writes: the manager's requests other than GET to the workload clusters'
//     API servers;
//   - resync-chart-pulls: chart downloads by its Helm engine (the chart cache is on disk);
//   - resync-new-revisions: Helm release Secrets added in the workload clusters.
//
// The resync is over once the package and HelmReleaseProxy controllers have taken up each of
// their objects at least once and every controller's work queue has then stayed empty for
// resyncQuiet.
func benchmarkResync(b *testing.B, c *client.Client, kc ctrlclient.Client, home string, names []string) {
	b.Helper()
	ctx := b.Context()
	releases := make([]ctrlclient.Client, 0, len(names))
	for _, name := range names {
		releases = append(releases, workloadClient(b, kc, name))
	}
	revisionsBefore := helmRevisions(b, releases)
	hrps := &addonsv1.HelmReleaseProxyList{}
	if err := kc.List(ctx, hrps); err != nil {
		b.Fatal(err)
	}
	packages := &packagesv1.PackageList{}
	if err := kc.List(ctx, packages); err != nil {
		b.Fatal(err)
	}

	dir := filepath.Join(home, "clusters", "mgmt")
	supervisor := process.InDir(dir)
	if err := supervisor.Stop(ctx, "manager", process.DefaultStopTimeout); err != nil {
		b.Fatal(err)
	}
	if err := c.StartManager(ctx, "mgmt"); err != nil {
		b.Fatal(err)
	}

	var quietSince time.Time
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		m := managerMetrics(b, home)
		if m.added["helmreleaseproxy"] < float64(len(hrps.Items)) || m.added["package"] < float64(len(packages.Items)) || m.queued > 0 {
			quietSince = time.Time{}
			return false, nil
		}
		if quietSince.IsZero() {
			quietSince = time.Now()
		}
		return time.Since(quietSince) >= resyncQuiet, nil
	})
	if err != nil {
		b.Fatalf("the restarted manager did not finish its resync: %v", err)
	}

	m := managerMetrics(b, home)
	_, writes := workloadRequests(b, kc, names, requestCounts{}, m.requests)
	b.ReportMetric(writes, "resync-workload-writes")
	b.ReportMetric(m.engine["chart_pull"], "resync-chart-pulls")
	b.ReportMetric(float64(helmRevisions(b, releases)-revisionsBefore), "resync-new-revisions")
}

// resyncQuiet is how long every work queue must stay empty for benchmarkResync's resync to count
// as over.
const resyncQuiet = 3 * time.Second

// workloadClient returns a client of workload cluster name.
func workloadClient(b *testing.B, kc ctrlclient.Client, name string) ctrlclient.Client {
	b.Helper()
	wc, err := ctrlclient.New(workloadConfig(b, kc, name), ctrlclient.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return wc
}

// helmRevisions counts the Helm release Secrets (one per revision) in the clusters of clients.
func helmRevisions(b *testing.B, clients []ctrlclient.Client) int {
	b.Helper()
	n := 0
	for _, wc := range clients {
		list := &corev1.SecretList{}
		if err := wc.List(b.Context(), list, ctrlclient.MatchingLabels{"owner": "helm"}); err != nil {
			b.Fatal(err)
		}
		n += len(list.Items)
	}
	return n
}
