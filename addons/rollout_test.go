package addons_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// The rollouts below run the real Helm engine against one workload API server per cluster. A
// test's deployment controller (runDeploymentController) makes the releases' Deployments
// available, which is what a rollout's health gate waits for.

func TestAChangeRollsOutBatchByBatchWithAPauseBetween(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	names := []string{"w1", "w2", "w3", "w4"}
	envs := useWorkloadClusters(t, ns, names...)
	releaseNS := "batches-" + ns
	runDeploymentController(t, releaseNS, envs)
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	for _, c := range names {
		createCluster(g, ns, c, map[string]string{"env": "prod"})
	}
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.Version, p.Spec.Namespace = repoURL, "1.0.0", releaseNS
	p.Spec.ValuesTemplate = "greeting: v1\n"
	p.Spec.Rollout = &addonsv1.Rollout{BatchSize: 2, PauseBetweenBatches: &metav1.Duration{Duration: 2 * time.Second}}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(rolloutOf(g, ns, "web").Phase).To(Equal(addonsv1.RolloutComplete), "new clusters install at once")
	}, timeout, interval).Should(Succeed())

	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) { p.Spec.ValuesTemplate = "greeting: v2\n" })
	g.Eventually(func(g Gomega) {
		ro := rolloutOf(g, ns, "web")
		g.Expect(ro.Phase).To(Equal(addonsv1.RolloutPaused))
		g.Expect(ro.Updated).To(Equal([]string{"w1", "w2"}))
	}, timeout, interval).Should(Succeed())
	for i, c := range names[2:] {
		g.Expect(releaseRevisions(g, envs[2+i], releaseNS, "web")).To(Equal([]int{1}), "%s waits for the next batch", c)
	}
	g.Eventually(func(g Gomega) {
		p := getProxy(g, ns, "web")
		g.Expect(p.Status.Rollout.Phase).To(Equal(addonsv1.RolloutComplete))
		g.Expect(p.Status.Rollout.Updated).To(Equal(names))
		g.Expect(p.Status.Clusters).To(HaveEach(HaveField("Revision", BeEquivalentTo(2))))
		g.Expect(condition(p.Status.Conditions, addonsv1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, interval).Should(Succeed())
	for i, c := range names {
		g.Expect(greeting(g, envs[i], releaseNS)).To(Equal("v2"), c)
	}
}

func TestAFailingBatchStopsTheRolloutAndRollsBackTheClustersItChanged(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	names := []string{"w1", "w2", "w3", "w4"}
	envs := useWorkloadClusters(t, ns, names...)
	releaseNS := "rollback-" + ns
	runDeploymentController(t, releaseNS, envs)
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	// The template reads each cluster's replicas label; w2's is not a number, which the chart's
	// values schema rejects.
	for _, c := range names {
		replicas := "2"
		if c == "w2" {
			replicas = "two"
		}
		createCluster(g, ns, c, map[string]string{"env": "prod", "replicas": replicas})
	}
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.Version, p.Spec.Namespace = repoURL, "1.0.0", releaseNS
	p.Spec.ValuesTemplate = "greeting: v1\n"
	p.Spec.Rollout = &addonsv1.Rollout{BatchSize: 1, MaxFailures: 0, RollbackOnFailure: true}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(rolloutOf(g, ns, "web").Phase).To(Equal(addonsv1.RolloutComplete))
	}, timeout, interval).Should(Succeed())

	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) {
		p.Spec.ValuesTemplate = "greeting: v2\nreplicas: {{ index .Cluster.metadata.labels \"replicas\" }}\n"
	})
	g.Eventually(func(g Gomega) {
		ro := rolloutOf(g, ns, "web")
		g.Expect(ro.Phase).To(Equal(addonsv1.RolloutRolledBack), ro.Message)
		g.Expect(ro.Updated).To(Equal([]string{"w1", "w2"}))
		g.Expect(ro.Failed).To(Equal([]string{"w2"}))
	}, timeout, interval).Should(Succeed())
	p = getProxy(g, ns, "web")
	g.Expect(condition(p.Status.Conditions, addonsv1.ReadyCondition).Reason).To(Equal(addonsv1.RolloutFailedReason))
	g.Expect(eventNotes(g, p)).To(ContainElement(And(HavePrefix("Cluster w2 failed:"), ContainSubstring("replicas"))),
		"the failure is Helm's own schema error")

	// w1 was upgraded, then rolled back to what it ran before: a third revision with v1's values.
	// w2's upgrade failed (it made no revision) and was rolled back to its deployed revision. w3
	// and w4 were never touched.
	g.Expect(releaseRevisions(g, envs[0], releaseNS, "web")).To(Equal([]int{1, 2, 3}))
	g.Expect(greeting(g, envs[0], releaseNS)).To(Equal("v1"))
	g.Expect(releaseRevisions(g, envs[1], releaseNS, "web")).To(Equal([]int{1, 2}))
	for i, c := range []string{"w3", "w4"} {
		g.Expect(releaseRevisions(g, envs[2+i], releaseNS, "web")).To(Equal([]int{1}), c)
		g.Expect(getHRP(g, ns, "web", c).Spec.Values).To(Equal("greeting: v1\n"), "%s keeps the old spec", c)
	}
	hrp := getHRP(g, ns, "web", "w1")
	g.Expect(condition(hrp.Status.Conditions, addonsv1.ReadyCondition).Reason).To(Equal(addonsv1.RolledBackReason))
	g.Expect(eventReasons(g, hrp)).To(ContainElement("RolledBack"))

	// The rolled-back release stays put: a resync does not upgrade it again.
	touch(g, hrp)
	g.Consistently(func(g Gomega) {
		g.Expect(releaseRevisions(g, envs[0], releaseNS, "web")).To(Equal([]int{1, 2, 3}))
	}, 2*time.Second, interval).Should(Succeed())

	// A fixed proxy starts a new rollout that reaches every cluster.
	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) {
		p.Spec.ValuesTemplate = "greeting: v3\nreplicas: 2\n"
		p.Spec.Rollout.BatchSize = 2
	})
	g.Eventually(func(g Gomega) {
		ro := rolloutOf(g, ns, "web")
		g.Expect(ro.Phase).To(Equal(addonsv1.RolloutComplete), ro.Message)
		for i := range names {
			g.Expect(greeting(g, envs[i], releaseNS)).To(Equal("v3"), names[i])
		}
	}, 2*timeout, interval).Should(Succeed())
}

// The manager is stopped while a batch waits for its cluster to be healthy, and a new one (a new
// engine too) takes over on the same API server: the rollout goes on from that batch, changes
// no cluster twice and counts each once.
func TestAManagerStoppedMidRolloutResumesTheRolloutWhereItWas(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	names := []string{"w1", "w2", "w3"}
	envs := useWorkloadClusters(t, ns, names...)
	releaseNS := "resume-" + ns
	runDeploymentController(t, releaseNS, envs, envs[0]) // w1's workloads do not come up yet
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	for _, c := range names {
		createCluster(g, ns, c, map[string]string{"env": "prod"})
	}
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.Version, p.Spec.Namespace = repoURL, "1.0.0", releaseNS
	p.Spec.ValuesTemplate = "greeting: v1\n"
	p.Spec.Rollout = &addonsv1.Rollout{BatchSize: 1}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(rolloutOf(g, ns, "web").Phase).To(Equal(addonsv1.RolloutComplete))
	}, timeout, interval).Should(Succeed())

	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) { p.Spec.ValuesTemplate = "greeting: v2\n" })
	g.Eventually(func(g Gomega) {
		ro := rolloutOf(g, ns, "web")
		g.Expect(ro.Updated).To(Equal([]string{"w1"}))
		g.Expect(ro.Message).To(Equal("waiting for w1 to be healthy"))
		g.Expect(getHRP(g, ns, "web", "w1").Status.Revision).To(BeEquivalentTo(2))
	}, timeout, interval).Should(Succeed())

	restartManager(t, func() {
		// While no manager runs, w1's workloads come up.
		runDeploymentController(t, releaseNS, envs[:1])
		g.Eventually(func(g Gomega) {
			d := &appsv1.Deployment{}
			g.Expect(envs[0].Client.Get(ctx, ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web"}, d)).To(Succeed())
			g.Expect(d.Status.AvailableReplicas).To(BeEquivalentTo(1))
		}, timeout, interval).Should(Succeed())
		for i, c := range names {
			g.Expect(greeting(g, envs[i], releaseNS)).To(Equal(map[bool]string{true: "v2", false: "v1"}[c == "w1"]), c)
		}
	})

	g.Eventually(func(g Gomega) {
		p := getProxy(g, ns, "web")
		ro := rolloutOf(g, ns, "web")
		g.Expect(ro.Phase).To(Equal(addonsv1.RolloutComplete), ro.Message)
		g.Expect(ro.Updated).To(Equal(names), "each cluster counted once")
		g.Expect(ro.Failed).To(BeEmpty())
		g.Expect(p.Status.ReadyClusters).To(BeEquivalentTo(3))
		g.Expect(gatherMetrics(g)).To(HaveKeyWithValue("flotilla_addons_rollout_clusters{helmchartproxy=web,namespace="+ns+",state=updated,}", 3.0))
	}, 2*timeout, interval).Should(Succeed())
	for i, c := range names {
		g.Expect(releaseRevisions(g, envs[i], releaseNS, "web")).To(Equal([]int{1, 2}), "%s: installed once, upgraded once", c)
		g.Expect(greeting(g, envs[i], releaseNS)).To(Equal("v2"), c)
	}
	notes := eventNotes(g, getProxy(g, ns, "web"))
	for i, c := range names {
		batch := "changing " + c + " (" + strconv.Itoa(i+1) + " of 3 clusters)"
		g.Expect(countSuffix(notes, batch)).To(Equal(1), "the batch of %s started once", c)
	}
}

// releaseRevisions lists the revisions Helm records of release namespace/name in w.
func releaseRevisions(g Gomega, w *testenv.Environment, namespace, name string) []int {
	list := &corev1.SecretList{}
	g.Expect(w.Client.List(context.Background(), list, ctrlclient.InNamespace(namespace), ctrlclient.MatchingLabels{"owner": "helm", "name": name})).To(Succeed())
	var revisions []int
	for _, s := range list.Items {
		v, err := strconv.Atoi(s.Labels["version"])
		g.Expect(err).NotTo(HaveOccurred())
		revisions = append(revisions, v)
	}
	slices.Sort(revisions)
	return revisions
}

// greeting is the greeting the hello chart's ConfigMap holds in w.
func greeting(g Gomega, w *testenv.Environment, namespace string) string {
	cm := &corev1.ConfigMap{}
	g.Expect(w.Client.Get(context.Background(), ctrlclient.ObjectKey{Namespace: namespace, Name: "web-config"}, cm)).To(Succeed())
	return cm.Data["greeting"]
}

// eventNotes returns the notes of the Events regarding obj, each as many times as it was
// recorded (an Event's series counts repeats, and a restarted manager records a new Event).
func eventNotes(g Gomega, obj ctrlclient.Object) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(context.Background(), list, ctrlclient.InNamespace(obj.GetNamespace()))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Name != obj.GetName() {
			continue
		}
		n := 1
		if e.Series != nil {
			n = int(e.Series.Count)
		}
		for range n {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

func countSuffix(notes []string, suffix string) int {
	n := 0
	for _, note := range notes {
		if strings.HasSuffix(note, suffix) {
			n++
		}
	}
	return n
}
