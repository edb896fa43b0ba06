package addons_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/internal/charttest"
)

func TestAChartInstallsUpgradesAndUninstallsInARealWorkloadCluster(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0"), charttest.Hello("1.1.0")}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Version, p.Spec.Namespace = repoURL, "hello", "1.0.0", "web-"+ns
	p.Spec.ValuesTemplate = "greeting: hi from {{ .Cluster.metadata.name }}\n"
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())

	hrp := eventuallyReady(g, ns, "web", "w1")
	g.Expect(hrp.Status.Revision).To(BeEquivalentTo(1))
	g.Expect(hrp.Status.ChartVersion).To(Equal("1.0.0"))
	g.Expect(hrp.Status.ReleaseStatus).To(Equal("deployed"))
	cm := &corev1.ConfigMap{}
	g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "web-" + ns, Name: "web-config"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(Equal(map[string]string{"greeting": "hi from w1", "version": "1.0.0"}))
	g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "web-" + ns, Name: "web"}, &appsv1.Deployment{})).To(Succeed())

	// A new chart version upgrades: a new revision.
	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) { p.Spec.Version = "1.1.0" })
	g.Eventually(func(g Gomega) {
		hrp := eventuallyReady(g, ns, "web", "w1")
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(2))
		g.Expect(hrp.Status.ChartVersion).To(Equal("1.1.0"))
		g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "web-" + ns, Name: "web-config"}, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("version", "1.1.0"))
	}, timeout, interval).Should(Succeed())

	// A version the repository does not have: Ready carries Helm's error; the release stays.
	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) { p.Spec.Version = "9.9.9" })
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "web", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.InstallFailedReason))
		g.Expect(c.Message).To(ContainSubstring("9.9.9"))
	}, timeout, interval).Should(Succeed())

	// Deleting the proxy uninstalls the release from the workload cluster.
	g.Expect(env.Client.Delete(ctx, getProxy(g, ns, "web"))).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: ns, Name: "web"}, &addonsv1.HelmChartProxy{}))
	}, timeout, interval).Should(BeTrue())
	g.Expect(apierrors.IsNotFound(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "web-" + ns, Name: "web-config"}, cm))).To(BeTrue())
}

// A proxy without an exact version (the latest chart, or a range) resolves its chart on every
// resync, which the engine answers Unchanged; drift is corrected on that path too.
func TestDriftIsCorrectedForAReleaseThatFollowsTheLatestChart(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	releaseNS := "latest-" + ns
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Version, p.Spec.Namespace = repoURL, "hello", "", releaseNS
	p.Spec.ValuesTemplate = ""
	p.Spec.DriftCorrection = &addonsv1.DriftCorrection{Mode: addonsv1.DriftCorrectionEnabled, Interval: &metav1.Duration{Duration: time.Second}}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "web", "w1")

	deployKey := ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web"}
	deploy := &appsv1.Deployment{}
	g.Expect(w.Client.Get(ctx, deployKey, deploy)).To(Succeed())
	g.Expect(w.Client.Delete(ctx, deploy)).To(Succeed())
	g.Eventually(func(g Gomega) {
		restored := &appsv1.Deployment{}
		g.Expect(w.Client.Get(ctx, deployKey, restored)).To(Succeed())
		g.Expect(restored.UID).NotTo(Equal(deploy.UID))
	}, timeout, interval).Should(Succeed())
	g.Expect(getHRP(g, ns, "web", "w1").Status.Revision).To(BeEquivalentTo(1), "drift correction makes no new Helm revision")
}

func TestDriftedObjectsAreRestoredExceptIgnoredFields(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	releaseNS := "drift-" + ns
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Version, p.Spec.Namespace = repoURL, "hello", "1.0.0", releaseNS
	p.Spec.ValuesTemplate = ""
	p.Spec.DriftCorrection = &addonsv1.DriftCorrection{
		Mode:     addonsv1.DriftCorrectionEnabled,
		Interval: &metav1.Duration{Duration: time.Second},
		Ignore:   []addonsv1.DriftIgnoreRule{{Kind: "Deployment", Paths: []string{"/spec/replicas"}}},
	}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "web", "w1")
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "web", "w1").Status.Conditions, addonsv1.DriftedCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.NoDriftReason))
	}, timeout, interval).Should(Succeed())

	cmKey := ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web-config"}
	deployKey := ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web"}

	// A changed ConfigMap comes back; so does a deleted Deployment.
	cm := &corev1.ConfigMap{}
	g.Expect(w.Client.Get(ctx, cmKey, cm)).To(Succeed())
	cm.Data["greeting"] = "changed by hand"
	g.Expect(w.Client.Update(ctx, cm)).To(Succeed())
	deploy := &appsv1.Deployment{}
	g.Expect(w.Client.Get(ctx, deployKey, deploy)).To(Succeed())
	g.Expect(w.Client.Delete(ctx, deploy)).To(Succeed())

	g.Eventually(func(g Gomega) {
		g.Expect(w.Client.Get(ctx, cmKey, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello"))
		restored := &appsv1.Deployment{}
		g.Expect(w.Client.Get(ctx, deployKey, restored)).To(Succeed())
		g.Expect(restored.UID).NotTo(Equal(deploy.UID))
		g.Expect(restored.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "Helm"))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		hrp := getHRP(g, ns, "web", "w1")
		g.Expect(hrp.Status.DriftCorrections).To(BeNumerically(">=", 2))
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(1), "drift correction makes no new Helm revision")
		g.Expect(eventReasons(g, hrp)).To(ContainElement("DriftCorrected"))
	}, timeout, interval).Should(Succeed())

	// A later upgrade owns the restored objects as before (restoring applied them as Helm).
	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) { p.Spec.ValuesTemplate = "greeting: upgraded\n" })
	g.Eventually(func(g Gomega) {
		hrp := eventuallyReady(g, ns, "web", "w1")
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(2))
		g.Expect(w.Client.Get(ctx, cmKey, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "upgraded"))
	}, timeout, interval).Should(Succeed())

	// Scaling the Deployment is ignored: /spec/replicas belongs to someone else.
	g.Expect(w.Client.Get(ctx, deployKey, deploy)).To(Succeed())
	deploy.Spec.Replicas = ptr.To[int32](3)
	g.Expect(w.Client.Update(ctx, deploy)).To(Succeed())
	corrections := getHRP(g, ns, "web", "w1").Status.DriftCorrections
	g.Consistently(func(g Gomega) {
		g.Expect(w.Client.Get(ctx, deployKey, deploy)).To(Succeed())
		g.Expect(*deploy.Spec.Replicas).To(BeEquivalentTo(3))
	}, 3*time.Second, interval).Should(Succeed())
	g.Expect(getHRP(g, ns, "web", "w1").Status.DriftCorrections).To(Equal(corrections))
}

func TestADryRunDiffsWithoutChangingAnythingAndTheCLIShowsTheSameDiff(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0"), charttest.Hello("1.1.0")}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	// The CLI reaches the workload cluster through its kubeconfig Secret, as CAPI writes it.
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "w1-kubeconfig", Namespace: ns, Labels: map[string]string{"cluster.x-k8s.io/cluster-name": "w1"}},
		Data:       map[string][]byte{"value": w.Kubeconfig},
	})).To(Succeed())

	releaseNS := "dry-" + ns
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Version, p.Spec.Namespace = repoURL, "hello", "1.0.0", releaseNS
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "web", "w1")

	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) {
		p.Spec.DryRun = true
		p.Spec.Version = "1.1.0"
	})
	g.Eventually(func(g Gomega) {
		hrp := getHRP(g, ns, "web", "w1")
		c := condition(hrp.Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.DryRunReason))
		g.Expect(c.ObservedGeneration).To(Equal(hrp.Generation))
		g.Expect(hrp.Status.DryRunDiff).To(ContainSubstring(`+  version: "1.1.0"`))
		g.Expect(hrp.Status.DryRunDiff).To(ContainSubstring(`-  version: "1.0.0"`))
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(1))
	}, timeout, interval).Should(Succeed())
	cm := &corev1.ConfigMap{}
	g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web-config"}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("version", "1.0.0"), "a dry run changes nothing")

	// `flotilla addons diff` and `flotilla get addons` through the CLI library.
	mgmtKubeconfig := filepath.Join(t.TempDir(), "mgmt.kubeconfig")
	g.Expect(os.WriteFile(mgmtKubeconfig, env.Kubeconfig, 0o600)).To(Succeed())
	cli, err := client.New(t.TempDir(), t.TempDir(), io.Discard)
	g.Expect(err).NotTo(HaveOccurred())
	diffs, err := cli.DiffAddon(ctx, mgmtKubeconfig, ns, "web")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(diffs).To(HaveLen(1))
	g.Expect(diffs[0].Cluster).To(Equal("w1"))
	g.Expect(diffs[0].Err).NotTo(HaveOccurred())
	g.Expect(diffs[0].Diff).To(Equal(getHRP(g, ns, "web", "w1").Status.DryRunDiff))
	addons, err := cli.GetAddons(ctx, mgmtKubeconfig, ns)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(addons.Proxies).To(HaveLen(1))
	g.Expect(addons.Releases).To(HaveLen(1))
	g.Expect(addons.Releases[0].Spec.ClusterName).To(Equal("w1"))

	// Leaving the dry run applies the change.
	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) { p.Spec.DryRun = false })
	g.Eventually(func(g Gomega) {
		hrp := eventuallyReady(g, ns, "web", "w1")
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(2))
		g.Expect(hrp.Status.DryRunDiff).To(BeEmpty())
	}, timeout, interval).Should(Succeed())
}

func TestARolloutWaitsForTheWorkloadsOfTheChangedClusterToBeAvailable(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	envs := useWorkloadClusters(t, ns, "w1", "w2")
	w := envs[0]
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})
	createCluster(g, ns, "w2", map[string]string{"env": "prod"})

	releaseNS := "gate-" + ns
	runDeploymentController(t, releaseNS, envs[1:]) // w1's Deployment is made available below
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Version, p.Spec.Namespace = repoURL, "hello", "1.0.0", releaseNS
	p.Spec.ValuesTemplate = "greeting: v1\n"
	p.Spec.Rollout = &addonsv1.Rollout{BatchSize: 1, HealthTimeout: &metav1.Duration{Duration: time.Minute}}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "web", "w1")
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "web", "w1").Status.Conditions, addonsv1.HealthyCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.WorkloadsNotAvailableReason))
		g.Expect(c.Message).To(ContainSubstring("Deployment " + releaseNS + "/web (its controller has not seen the current spec)"))
	}, timeout, interval).Should(Succeed())

	updateProxy(g, ns, "web", func(p *addonsv1.HelmChartProxy) { p.Spec.ValuesTemplate = "greeting: v2\n" })
	g.Eventually(func(g Gomega) {
		ro := rolloutOf(g, ns, "web")
		g.Expect(ro.Updated).To(Equal([]string{"w1"}))
		g.Expect(ro.Message).To(Equal("waiting for w1 to be healthy"))
		g.Expect(eventuallyReady(g, ns, "web", "w1").Status.Revision).To(BeEquivalentTo(2))
	}, timeout, interval).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getHRP(g, ns, "web", "w2").Spec.Values).To(Equal("greeting: v1\n"), "w2 waits for w1's workloads")
	}, 2*time.Second, interval).Should(Succeed())

	// The Deployment becomes available, as its controller would report it.
	deploy := &appsv1.Deployment{}
	g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web"}, deploy)).To(Succeed())
	deploy.Status = appsv1.DeploymentStatus{ObservedGeneration: deploy.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1}
	g.Expect(w.Client.Status().Update(ctx, deploy)).To(Succeed())

	g.Eventually(func(g Gomega) {
		ro := rolloutOf(g, ns, "web")
		g.Expect(ro.Phase).To(Equal(addonsv1.RolloutComplete), ro.Message)
		g.Expect(getHRP(g, ns, "web", "w2").Spec.Values).To(Equal("greeting: v2\n"))
	}, timeout, interval).Should(Succeed())
}

func TestValuesTheSchemaRejectsAndAnUnreachableRepositoryFailOnlyTheirOwnRelease(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	useWorkloadClusters(t, ns, "w1")
	strict := charttest.Hello("1.0.0")
	strict.Files["values.schema.json"] = `{"type": "object", "properties": {"replicas": {"type": "integer"}}}`
	repoURL := charttest.Repository{Charts: []charttest.Chart{strict}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	good := proxy(ns, "good")
	good.Spec.RepoURL, good.Spec.Version, good.Spec.Namespace, good.Spec.ValuesTemplate = repoURL, "1.0.0", "good-"+ns, "replicas: 1"
	bad := proxy(ns, "bad")
	bad.Spec.RepoURL, bad.Spec.Version, bad.Spec.Namespace, bad.Spec.ValuesTemplate = repoURL, "1.0.0", "bad-"+ns, "replicas: two"
	gone := proxy(ns, "gone")
	gone.Spec.RepoURL, gone.Spec.Version, gone.Spec.Namespace = "http://127.0.0.1:1", "1.0.0", "gone-"+ns
	for _, p := range []*addonsv1.HelmChartProxy{good, bad, gone} {
		g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	}

	eventuallyReady(g, ns, "good", "w1")
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "bad", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.InstallFailedReason))
		g.Expect(c.Message).To(ContainSubstring("replicas"))
		g.Expect(c.Message).To(ContainSubstring("integer"))
	}, timeout, interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		c := condition(getHRP(g, ns, "gone", "w1").Status.Conditions, addonsv1.ReadyCondition)
		g.Expect(c.Reason).To(Equal(addonsv1.InstallFailedReason))
		g.Expect(c.Message).To(ContainSubstring("127.0.0.1:1"))
	}, timeout, interval).Should(Succeed())
}
