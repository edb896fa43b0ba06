package addons_test

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// A release goes before the releases it depends on, in each cluster: when a cluster stops
// matching both proxies, and when both proxies are deleted, the dependency first.
func TestDependentsAreUninstalledBeforeTheirDependencies(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	envs := useWorkloadClusters(t, ns, "w1", "w2")
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	w1 := createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	createCluster(g, ns, "w2", map[string]string{"env": "prod"})
	releaseNS := "deps-" + ns
	uninstalls := []*uninstallOrder{watchUninstalls(t, envs[0], releaseNS), watchUninstalls(t, envs[1], releaseNS)}

	base := proxy(ns, "base")
	app := proxy(ns, "app")
	app.Spec.DependsOn = []string{"base"}
	for _, p := range []*addonsv1.HelmChartProxy{base, app} {
		p.Spec.RepoURL, p.Spec.Version, p.Spec.Namespace = repoURL, "1.0.0", releaseNS
		g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	}
	for _, c := range []string{"w1", "w2"} {
		eventuallyReady(g, ns, "base", c)
		eventuallyReady(g, ns, "app", c)
	}

	// w1 stops matching both.
	patchLabels(g, w1, map[string]string{"env": "dev"})
	g.Eventually(uninstalls[0].releases, timeout, interval).Should(Equal([]string{"app", "base"}))

	// Both proxies are deleted, the dependency first; while its release in w2 waits, it says why.
	g.Expect(env.Client.Delete(ctx, getProxy(g, ns, "base"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "base", "w2").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.WaitingForDependentsReason))
		g.Expect(c.Message).To(ContainSubstring("HelmChartProxy app"))
	}, timeout, interval).Should(Succeed())
	g.Expect(uninstalls[1].releases()).To(BeEmpty())
	g.Expect(env.Client.Delete(ctx, getProxy(g, ns, "app"))).To(Succeed())
	g.Eventually(uninstalls[1].releases, timeout, interval).Should(Equal([]string{"app", "base"}))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKeyFromObject(base), &addonsv1.HelmChartProxy{}))
	}, timeout, interval).Should(BeTrue())
}

// uninstallOrder records, in the order the API server saw it, which release's Helm records
// were deleted first: Helm deletes a release's records when it has uninstalled it.
type uninstallOrder struct {
	mu    sync.Mutex
	names []string
}

func (u *uninstallOrder) releases() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.names...)
}

// watchUninstalls watches the Helm release records in namespace of the workload cluster w until
// the test ends.
func watchUninstalls(t *testing.T, w *testenv.Environment, namespace string) *uninstallOrder {
	t.Helper()
	cs, err := kubernetes.NewForConfig(w.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	watcher, err := cs.CoreV1().Secrets(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		t.Fatal(err)
	}
	order := &uninstallOrder{}
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		watcher.Stop()
		<-done
	})
	go func() {
		defer close(done)
		for ev := range watcher.ResultChan() {
			secret, ok := ev.Object.(*corev1.Secret)
			if !ok || ev.Type != watch.Deleted {
				continue
			}
			order.mu.Lock()
			if name := secret.Labels["name"]; len(order.names) == 0 || order.names[len(order.names)-1] != name {
				order.names = append(order.names, name)
			}
			order.mu.Unlock()
		}
	}()
	return order
}
