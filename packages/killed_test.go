package packages_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/internal/killtest"
	packagereconciler "github.com/flotilla-dev/flotilla/packages/reconcilers/package"
	"github.com/flotilla-dev/flotilla/pkg/helm"
)

// killedManagerMain runs the Package reconciler in a child process (killtest) against the
// management API server, reaching the one cluster it is told of through a config whose writes
// of Deployments never end: Helm has recorded the release as pending-install and applied the
// objects before the Deployment when it hangs there, until the process is killed.
func killedManagerMain() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "killed manager:", err)
		return 1
	}
	mgr, workloadConfig, err := killtest.Manager("")
	if err != nil {
		return fail(err)
	}
	configs := &restConfigs{configs: map[ctrlclient.ObjectKey]*rest.Config{
		{Namespace: killtest.Setting("namespace"), Name: killtest.Setting("cluster")}: workloadConfig,
	}}
	r := &packagereconciler.Reconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder(packagereconciler.FieldOwner),
		Installer: &helm.Engine{ChartCache: killtest.Setting("cache")}, RESTConfigs: configs, HelmTimeout: time.Hour,
	}
	if err := r.SetupWithManager(mgr); err != nil {
		return fail(err)
	}
	return fail(mgr.Start(context.Background()))
}

// TestAPackageWhoseManagerWasKilledMidInstallIsInstalled kills a manager process (SIGKILL) while
// Helm installs a Package (the release pending-install, some objects applied), and lets the
// test's own manager, which could not reach the cluster until then, take the Package over: the
// release is installed as revision 1, its one revision, and the Package is installed.
func TestAPackageWhoseManagerWasKilledMidInstallIsInstalled(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const name, repo, target = "w-killed", "killed/bundles", "killed"
	hello := helloChart("hello", "0.1.0").push(t, "")
	pushBundle(t, repo, "1.36", 96, signingKey, pkg("hello", hello))
	g.Expect(mgmt.Client.Create(ctx, &packagesv1.PackageBundleController{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: packagesv1.PackagesNamespace},
		Spec:       packagesv1.PackageBundleControllerSpec{Source: &packagesv1.BundleSource{Registry: regHost, Repository: repo}},
	})).To(Succeed())
	// The test's manager cannot reach the cluster: its Packages wait, ClusterUnreachable.
	c := newCluster(t, name, "1.36")
	t.Cleanup(func() { deleteCluster(t, c) })
	g.Eventually(func(g Gomega) {
		g.Expect(pbcOf(g, name).Spec.ActiveBundle).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())

	killed := killtest.Start(t,
		map[string]string{"namespace": c.Namespace, "cluster": name, "cache": t.TempDir()},
		map[string][]byte{"mgmt": mgmt.Kubeconfig, "workload": workload.Kubeconfig})

	p := newPackage(name, "hello", "hello", "")
	p.Spec.TargetNamespace = target
	g.Expect(mgmt.Client.Create(ctx, p)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(releaseStatuses(g, target, "hello")).To(Equal([]string{"pending-install"}))
		g.Expect(workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: target, Name: "hello-config"}, &corev1.ConfigMap{})).To(Succeed())
	}, timeout, interval).Should(Succeed())
	g.Expect(killed.Kill()).To(Succeed())

	recoveries := engine.Stats().Recoveries
	configs.set(ctrlclient.ObjectKeyFromObject(c), workload.Config)
	g.Eventually(func(g Gomega) {
		p := packageOf(g, name, "hello")
		g.Expect(p.Status.State).To(Equal(packagesv1.PackageInstalled))
		g.Expect(p.Status.Revision).To(Equal(1), "the killed install is done again as revision 1")
	}, timeout, interval).Should(Succeed())
	g.Expect(releaseStatuses(g, target, "hello")).To(Equal([]string{"deployed"}), "one revision for one install")
	g.Expect(workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: target, Name: "hello"}, &appsv1.Deployment{})).To(Succeed())
	g.Expect(engine.Stats().Recoveries - recoveries).To(Equal(int64(1)))
}

// releaseStatuses are the statuses of the revisions of release in namespace ns of the workload
// cluster, oldest first.
func releaseStatuses(g Gomega, ns, release string) []string {
	list := &corev1.SecretList{}
	g.Expect(workload.Client.List(context.Background(), list, ctrlclient.InNamespace(ns),
		ctrlclient.MatchingLabels{"owner": "helm", "name": release})).To(Succeed())
	slices.SortFunc(list.Items, func(a, b corev1.Secret) int { return strings.Compare(a.Labels["version"], b.Labels["version"]) })
	statuses := make([]string, 0, len(list.Items))
	for _, s := range list.Items {
		statuses = append(statuses, s.Labels["status"])
	}
	return statuses
}
