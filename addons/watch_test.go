package addons_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/charttest"
	"github.com/flotilla-dev/flotilla/internal/testenv"
)

// The objects of installed releases are watched in their workload clusters: a change is
// corrected when it happens, whatever the drift interval, and a release at rest costs its
// cluster no requests.

// driftOneHour is a drift interval no test waits for: what they see comes from the watches.
var driftOneHour = &addonsv1.DriftCorrection{Mode: addonsv1.DriftCorrectionEnabled, Interval: &metav1.Duration{Duration: time.Hour}}

func TestADeletedOrChangedObjectIsRestoredAtOnceWhateverTheDriftInterval(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useWorkloadClusters(t, ns, "w1")[0]
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	releaseNS := "watched-" + ns
	runDeploymentController(t, releaseNS, []*testenv.Environment{w}) // nothing waits for workloads
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Version, p.Spec.Namespace = repoURL, "hello", "1.0.0", releaseNS
	p.Spec.ValuesTemplate = ""
	p.Spec.DriftCorrection = driftOneHour
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "web", "w1")

	deployKey := ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web"}
	deploy := &appsv1.Deployment{}
	g.Expect(w.Client.Get(ctx, deployKey, deploy)).To(Succeed())
	start := time.Now()
	g.Expect(w.Client.Delete(ctx, deploy)).To(Succeed())
	g.Eventually(func(g Gomega) {
		restored := &appsv1.Deployment{}
		g.Expect(w.Client.Get(ctx, deployKey, restored)).To(Succeed())
		g.Expect(restored.UID).NotTo(Equal(deploy.UID))
	}, 3*time.Second, 50*time.Millisecond).Should(Succeed(), "the deletion is seen through the watch, not at the drift interval")
	t.Logf("deleted Deployment restored after %s", time.Since(start).Round(10*time.Millisecond))
	g.Eventually(func(g Gomega) {
		g.Expect(getHRP(g, ns, "web", "w1").Status.DriftCorrections).To(BeEquivalentTo(1))
	}, timeout, interval).Should(Succeed())

	cmKey := ctrlclient.ObjectKey{Namespace: releaseNS, Name: "web-config"}
	cm := &corev1.ConfigMap{}
	g.Expect(w.Client.Get(ctx, cmKey, cm)).To(Succeed())
	cm.Data["greeting"] = "changed by hand"
	start = time.Now()
	g.Expect(w.Client.Update(ctx, cm)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(w.Client.Get(ctx, cmKey, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hello"))
	}, 3*time.Second, 50*time.Millisecond).Should(Succeed(), "a changed ConfigMap (no generation) is seen too")
	t.Logf("changed ConfigMap restored after %s", time.Since(start).Round(10*time.Millisecond))

	g.Eventually(func(g Gomega) {
		hrp := getHRP(g, ns, "web", "w1")
		g.Expect(hrp.Status.DriftCorrections).To(BeEquivalentTo(2))
		g.Expect(hrp.Status.Revision).To(BeEquivalentTo(1))
	}, timeout, interval).Should(Succeed())
}

// idleWindow is how long TestReleasesAtRestSendNoRequestsToTheirCluster counts requests; the
// polling the watches replaced looked at a release whose workloads were not available every 5 s.
const idleWindow = 20 * time.Second

func TestReleasesAtRestSendNoRequestsToTheirCluster(t *testing.T) {
	startManager(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t)
	w := useDedicatedWorkloadCluster(t, ns, "w1")
	repoURL := charttest.Repository{Charts: []charttest.Chart{charttest.Hello("1.0.0")}}.Serve(t)
	createCluster(g, ns, "w1", map[string]string{"env": "prod"})

	// Drift correction at its default interval, and a Deployment that never becomes available:
	// this workload API server runs no controllers (and has no nodes).
	p := proxy(ns, "web")
	p.Spec.RepoURL, p.Spec.ChartName, p.Spec.Version, p.Spec.Namespace = repoURL, "hello", "1.0.0", "idle-"+ns
	p.Spec.ValuesTemplate = ""
	p.Spec.DriftCorrection = &addonsv1.DriftCorrection{Mode: addonsv1.DriftCorrectionEnabled}
	g.Expect(env.Client.Create(ctx, p)).To(Succeed())
	eventuallyReady(g, ns, "web", "w1")
	g.Eventually(func(g Gomega) {
		hrp := getHRP(g, ns, "web", "w1")
		g.Expect(condition(hrp.Status.Conditions, addonsv1.HealthyCondition).Reason).To(Equal(addonsv1.WorkloadsNotAvailableReason))
		g.Expect(condition(hrp.Status.Conditions, addonsv1.DriftedCondition).Reason).To(Equal(addonsv1.NoDriftReason))
	}, timeout, interval).Should(Succeed())
	time.Sleep(2 * time.Second) // what the watches' first events woke settles

	before := len(requestsSent(w))
	time.Sleep(idleWindow)
	during := requestsSent(w)[before:]
	t.Logf("%d requests to the workload cluster in %s at rest: %v", len(during), idleWindow, during)
	g.Expect(len(during)).To(BeNumerically("<=", 2), "at rest, only an informer's re-watch may reach the cluster:\n%s", strings.Join(during, "\n"))

	// The release is still looked after: a Deployment becoming available wakes it.
	deploy := &appsv1.Deployment{}
	g.Expect(w.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "idle-" + ns, Name: "web"}, deploy)).To(Succeed())
	markAvailable(ctx, w.Client, deploy)
	g.Eventually(func(g Gomega) {
		hrp := getHRP(g, ns, "web", "w1")
		g.Expect(condition(hrp.Status.Conditions, addonsv1.HealthyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, 5*time.Second, 50*time.Millisecond).Should(Succeed())
}
