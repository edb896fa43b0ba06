package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	addonsv1 "github.com/flotilla-dev/flotilla/api/addons/v1alpha1"
	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/pkg/registryconn"
)

// testPackagesAndAddons does what `make quickstart` does after the clusters exist, on a workload
// cluster of its own: the embedded registry in the background, the curated catalog published to
// it, a package controller for the cluster, a package with a dependency, and a HelmChartProxy
// applied from a file; then the cluster's deletion takes its packages along.
func testPackagesAndAddons(t *testing.T, f *fleet) {
	g := NewWithT(t)
	ctx := t.Context()
	out := t.TempDir()
	var progress bytes.Buffer
	c := newClient(t, f.home, &progress)

	const workload = "apps"
	file := writeClusterSpec(t, filepath.Join(out, workload+".yaml"),
		spec.GenerateOptions{Name: workload, Provider: spec.ProviderLocal, Workers: 1})
	g.Expect(c.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: file, Kubeconfig: f.kubeconfig, OutDir: out})).To(Succeed(), progress.String())
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = c.DeleteWorkloadCluster(context.Background(), client.DeleteWorkloadClusterOptions{Name: workload, Namespace: "default", Kubeconfig: f.kubeconfig, OutDir: out})
		}
	})
	workloadClient, err := client.KubeClient(client.UserKubeconfigPath(out, workload))
	g.Expect(err).NotTo(HaveOccurred())

	addr := freeAddress(t)
	_, err = c.EnsureRegistry(ctx, client.RegistryOptions{Listen: addr})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.StopRegistry(context.Background()) })
	published, err := c.Publish(ctx, client.PublishOptions{Registry: addr, Connection: registryconn.Config{PlainHTTP: true}})
	g.Expect(err).NotTo(HaveOccurred())
	publicKey, err := os.ReadFile(published.PublicKey)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = c.InstallPackageController(ctx, f.kubeconfig, client.PackageControllerOptions{
		Cluster: workload, Registry: addr, Repository: published.Repository, PublicKey: publicKey, PlainHTTP: ptr.To(true),
	})
	g.Expect(err).NotTo(HaveOccurred())

	t.Run("a package installs into the workload cluster, its dependency first", func(t *testing.T) {
		g := NewWithT(t)
		start := time.Now()
		_, err := c.InstallPackage(ctx, f.kubeconfig, client.InstallPackageOptions{Cluster: workload, Package: "hello-stack"})
		g.Expect(err).NotTo(HaveOccurred())
		p, err := c.WaitPackageReady(ctx, f.kubeconfig, workload, "hello-stack", 3*time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		t.Logf("hello-stack (with flotilla-greeter first) Ready in %s, version %s", time.Since(start).Round(time.Millisecond), p.Status.CurrentVersion)

		packages, err := c.GetPackages(ctx, f.kubeconfig, workload)
		g.Expect(err).NotTo(HaveOccurred())
		names := []string{}
		for _, p := range packages {
			names = append(names, p.Name)
			g.Expect(meta.IsStatusConditionTrue(p.Status.Conditions, packagesv1.ReadyCondition)).To(BeTrue(), "package %s", p.Name)
		}
		g.Expect(names).To(ContainElements("hello-stack", "flotilla-greeter"))

		// The releases and what they install are in the workload cluster, not the management one.
		secrets := &corev1.SecretList{}
		g.Expect(workloadClient.List(ctx, secrets, ctrlclient.InNamespace(packagesv1.DefaultTargetNamespace),
			ctrlclient.MatchingLabels{"owner": "helm"})).To(Succeed())
		releases := []string{}
		for _, s := range secrets.Items {
			releases = append(releases, s.Labels["name"])
		}
		g.Expect(releases).To(ContainElements("hello-stack", "flotilla-greeter"))
		deploys := &appsv1.DeploymentList{}
		g.Expect(workloadClient.List(ctx, deploys, ctrlclient.InNamespace(packagesv1.DefaultTargetNamespace))).To(Succeed())
		g.Expect(deploys.Items).NotTo(BeEmpty())
	})

	t.Run("a HelmChartProxy applied from a file lands on the workload cluster with its templated values", func(t *testing.T) {
		g := NewWithT(t)
		proxy := filepath.Join(out, "hello-addon.yaml")
		example, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "hello-addon.yaml"))
		g.Expect(err).NotTo(HaveOccurred())
		// The example names the quickstart's registry address; this run's registry listens elsewhere.
		g.Expect(os.WriteFile(proxy, bytes.ReplaceAll(example, []byte("127.0.0.1:5001"), []byte(addr)), 0o600)).To(Succeed())
		start := time.Now()
		applied, err := c.ApplyFile(ctx, client.ApplyFileOptions{File: proxy, Kubeconfig: f.kubeconfig, Wait: 3 * time.Minute})
		g.Expect(err).NotTo(HaveOccurred(), progress.String())
		g.Expect(applied).To(HaveLen(1))
		t.Logf("HelmChartProxy hello-addon Ready in %s", time.Since(start).Round(time.Millisecond))

		addons, err := c.GetAddons(ctx, f.kubeconfig, "default")
		g.Expect(err).NotTo(HaveOccurred())
		var onWorkload *addonsv1.HelmReleaseProxy
		for i, r := range addons.Releases {
			g.Expect(r.Spec.ClusterName).NotTo(Equal("mgmt"), "the management cluster is not selected")
			if r.Spec.ClusterName == workload {
				onWorkload = &addons.Releases[i]
			}
		}
		g.Expect(onWorkload).NotTo(BeNil())
		g.Expect(meta.IsStatusConditionTrue(onWorkload.Status.Conditions, addonsv1.ReadyCondition)).To(BeTrue())

		cms := &corev1.ConfigMapList{}
		g.Expect(workloadClient.List(ctx, cms, ctrlclient.InNamespace("hello-addon"))).To(Succeed())
		rendered := ""
		for _, cm := range cms.Items {
			for _, v := range cm.Data {
				rendered += v
			}
		}
		g.Expect(rendered).To(ContainSubstring(fmt.Sprintf("Hello from the addon on %s", workload)))

		diffs, err := c.DiffAddon(ctx, f.kubeconfig, "default", "hello-addon")
		g.Expect(err).NotTo(HaveOccurred())
		for _, d := range diffs {
			if d.Cluster == workload {
				g.Expect(d.Err).NotTo(HaveOccurred())
				g.Expect(d.Diff).To(BeEmpty(), "nothing to change right after the install")
			}
		}
	})

	t.Run("after a restart of the machine, flotilla start brings the cluster back with its packages and addons as they were", func(t *testing.T) {
		g := NewWithT(t)
		releases := helmReleases(g, workloadClient)
		g.Expect(releases).To(HaveKey(packagesv1.DefaultTargetNamespace + "/hello-stack"))
		restarted := &syncBuffer{}
		restarter := newClient(t, f.home, &bytes.Buffer{})
		restarter.Out = restarted
		restartMachine(t, f, restarter, restarted)

		_, err := c.WaitPackageReady(ctx, f.kubeconfig, workload, "hello-stack", time.Minute)
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			addons, err := c.GetAddons(ctx, f.kubeconfig, "default")
			g.Expect(err).NotTo(HaveOccurred())
			ready := false
			for _, r := range addons.Releases {
				if r.Spec.ClusterName == workload {
					ready = meta.IsStatusConditionTrue(r.Status.Conditions, addonsv1.ReadyCondition)
				}
			}
			g.Expect(ready).To(BeTrue(), "the addon's release on %s is Ready", workload)
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		g.Expect(helmReleases(g, workloadClient)).To(Equal(releases), "the same releases at the same revisions: nothing installed again")
	})

	t.Run("deleting the workload cluster takes its packages, package controller and namespace", func(t *testing.T) {
		g := NewWithT(t)
		progress.Reset()
		g.Expect(c.DeleteWorkloadCluster(ctx, client.DeleteWorkloadClusterOptions{Name: workload, Namespace: "default", Kubeconfig: f.kubeconfig, OutDir: out})).To(Succeed())
		deleted = true
		// What the CLI says shows the teardown's order: the addon's release and the packages
		// uninstalled, and only then the control plane stopped.
		said := progress.String()
		addonUninstalled := strings.Index(said, ": Uninstalled release hello-addon/")
		packagesUninstalled := strings.Index(said, "Cluster "+workload+": Packages uninstalled")
		controlPlaneStopped := strings.Index(said, "LocalControlPlane "+workload+": Stopped every process")
		g.Expect([]int{addonUninstalled, packagesUninstalled}).To(HaveEach(BeNumerically(">=", 0)), said)
		g.Expect(controlPlaneStopped).To(BeNumerically(">", max(addonUninstalled, packagesUninstalled)), said)
		t.Logf("delete printed:\n%s", said)
		g.Eventually(func() bool {
			err := f.admin.Get(ctx, ctrlclient.ObjectKey{Namespace: packagesv1.PackagesNamespace, Name: workload}, &packagesv1.PackageBundleController{})
			return apierrors.IsNotFound(err)
		}, time.Minute, time.Second).Should(BeTrue(), "the PackageBundleController is gone")
		g.Eventually(func() bool {
			err := f.admin.Get(ctx, ctrlclient.ObjectKey{Name: packagesv1.ClusterNamespace(workload)}, &corev1.Namespace{})
			return apierrors.IsNotFound(err)
		}, time.Minute, time.Second).Should(BeTrue(), "the cluster's packages namespace is gone")
		addons, err := c.GetAddons(ctx, f.kubeconfig, "default")
		g.Expect(err).NotTo(HaveOccurred())
		for _, r := range addons.Releases {
			g.Expect(r.Spec.ClusterName).NotTo(Equal(workload))
		}
	})
}

// helmReleases returns the revision of every Helm release in the cluster kc reaches, by
// namespace/name, from Helm's release Secrets.
func helmReleases(g Gomega, kc ctrlclient.Client) map[string]int {
	secrets := &corev1.SecretList{}
	g.Expect(kc.List(context.Background(), secrets, ctrlclient.MatchingLabels{"owner": "helm"})).To(Succeed())
	revisions := map[string]int{}
	for _, s := range secrets.Items {
		revision, err := strconv.Atoi(s.Labels["version"])
		g.Expect(err).NotTo(HaveOccurred(), "the revision of release Secret %s/%s", s.Namespace, s.Name)
		key := s.Namespace + "/" + s.Labels["name"]
		revisions[key] = max(revisions[key], revision)
	}
	return revisions
}

// freeAddress returns a loopback address nothing listens on.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(addr)
}
