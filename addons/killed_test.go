package addons_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/flotilla-dev/flotilla/addons/drift"
	"github.com/flotilla-dev/flotilla/addons/reconcilers/helmreleaseproxy"
	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/internal/killtest"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// oneCluster is the cluster cache of the killed manager: one cluster's config.
type oneCluster struct {
	key ctrlclient.ObjectKey
	cfg *rest.Config
}

func (o oneCluster) GetRESTConfig(_ context.Context, key ctrlclient.ObjectKey) (*rest.Config, error) {
	if key != o.key {
		return nil, fmt.Errorf("cluster %s is not this test's", key)
	}
	return o.cfg, nil
}

// killedManagerMain runs the HelmReleaseProxy reconciler in a child process (killtest) against
// the management API server, watching the test's namespace only, and reaching its one cluster
// through a config whose writes of Deployments never end: Helm has recorded the release as
// pending-install and applied the objects before the Deployment when it hangs there, until the
// process is killed.
func killedManagerMain() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "killed manager:", err)
		return 1
	}
	ns := killtest.Setting("namespace")
	mgr, workloadConfig, err := killtest.Manager(ns)
	if err != nil {
		return fail(err)
	}
	r := &helmreleaseproxy.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(helmreleaseproxy.FieldOwner),
		Engine:       &helm.Engine{ChartCache: killtest.Setting("cache")},
		ClusterCache: oneCluster{key: ctrlclient.ObjectKey{Namespace: ns, Name: killtest.Setting("cluster")}, cfg: workloadConfig},
		Drift:        &drift.Checker{FieldManager: helm.FieldManager()},
	}
	ctx := context.Background()
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		return fail(err)
	}
	return fail(mgr.Start(ctx))
}

// TestAReleaseWhoseManagerWasKilledMidInstallIsInstalled kills a manager process (SIGKILL) while
// Helm installs an addon's release (pending-install, some objects applied), and lets the test's
// manager, which could not reach the cluster until then, take it over: the release is installed
// as revision 1, its one revision, and the HelmReleaseProxy is Ready.
func TestAReleaseWhoseManagerWasKilledMidInstallIsInstalled(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useDedicatedWorkloadCluster(t, ns, "w1")
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	key := ctrlclient.ObjectKey{Namespace: ns, Name: "w1"}
	clusters.setUnreachable(key, true)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	killed := killtest.Start(t,
		map[string]string{"namespace": ns, "cluster": "w1", "cache": t.TempDir()},
		map[string][]byte{"mgmt": env.Kubeconfig, "workload": w.Kubeconfig})
	releaseNS := "killed-" + ns
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Version, p.Spec.Namespace = repoURL, "hello", "1.0.0", releaseNS
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	statuses := func(g Gomega) []string {
		list := &corev1.SecretList{}
		g.Expect(w.Client.List(ctx, list, ctrlclient.InNamespace(releaseNS), ctrlclient.MatchingLabels{"owner": "helm", "name": "web"})).To(Succeed())
		slices.SortFunc(list.Items, func(a, b corev1.Secret) int { return strings.Compare(a.Labels["version"], b.Labels["version"]) })
		var out []string
		for _, s := range list.Items {
			out = append(out, s.Labels["status"])
		}
		return out
	}
	g.Eventually(func(g Gomega) {
		g.Expect(statuses(g)).To(Equal([]string{"pending-install"}))
		g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web-config"}, &corev1.ConfigMap{})).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Expect(killed.Kill()).To(Succeed())

	clusters.setUnreachable(key, false)
	g.Eventually(func(g Gomega) {
		hrp := eventuallyReady(g, ns, "web", "w1")
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(1), "the killed install is done again as revision 1")
	}, timeout, interval).Should(Succeed())
	g.Expect(statuses(g)).To(Equal([]string{"deployed"}), "one revision for one install")
	g.Consistently(func(g Gomega) []string { return statuses(g) }, 2*time.Second, interval).Should(Equal([]string{"deployed"}))
}
