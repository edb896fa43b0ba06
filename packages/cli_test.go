package packages_test

import (
	"bytes"
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
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	packagesv1 "github.com/flotilla-dev/flotilla/api/packages/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/packages/defaults"
	"github.com/flotilla-dev/flotilla/pkg/version"
)

// kubeconfigFile writes an Environment's kubeconfig to a file, as the CLI takes it.
func kubeconfigFile(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	must(t, os.WriteFile(path, data, 0o600))
	return path
}

// markManagement records a Flotilla version in mgmt, as a running manager does: without it the
// CLI refuses the cluster.
func markManagement(t *testing.T) {
	t.Helper()
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: version.ConfigMapName, Namespace: version.PublicNamespace},
		Data:       map[string]string{version.ConfigMapKey: version.Get().Version},
	}
	if err := mgmt.Client.Create(context.Background(), cm); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func TestTheCLIManagesPackagesThroughTheManagementCluster(t *testing.T) {
	ctx := context.Background()
	defaultBundle(t)
	markManagement(t)
	c := &client.Client{Out: io.Discard}
	mgmtKubeconfig := kubeconfigFile(t, mgmt.Kubeconfig)
	cluster := newCluster(t, "w-cli", "1.36")
	configs.set(ctrlclient.ObjectKeyFromObject(cluster), workload.Config)

	t.Run("install packagecontroller refuses a workload cluster's kubeconfig", func(t *testing.T) {
		g := NewWithT(t)
		_, err := c.InstallPackageController(ctx, kubeconfigFile(t, workload.Kubeconfig), client.PackageControllerOptions{Cluster: "w-cli"})
		g.Expect(err).To(MatchError(ContainSubstring("does not point to a Flotilla management cluster")))
	})

	t.Run("install packagecontroller refuses a cluster the management cluster does not manage", func(t *testing.T) {
		g := NewWithT(t)
		_, err := c.InstallPackageController(ctx, mgmtKubeconfig, client.PackageControllerOptions{Cluster: "nope"})
		g.Expect(err).To(MatchError(ContainSubstring("manages no cluster named nope")))
	})

	t.Run("install packagecontroller keeps the PackageBundleController, which finds the active bundle", func(t *testing.T) {
		g := NewWithT(t)
		pbc, err := c.InstallPackageController(ctx, mgmtKubeconfig, client.PackageControllerOptions{Cluster: "w-cli"})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pbc.Name).To(Equal("w-cli"))
		g.Eventually(func(g Gomega) {
			b, err := c.ListPackages(ctx, mgmtKubeconfig, "w-cli", "")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(b.Package("hello")).NotTo(BeNil())
		}, timeout, interval).Should(Succeed())
	})

	t.Run("install packagecontroller keeps registry credentials in a Secret that package-defaults names", func(t *testing.T) {
		g := NewWithT(t)
		_, err := c.InstallPackageController(ctx, mgmtKubeconfig, client.PackageControllerOptions{Cluster: "w-cli", Username: "robot", Password: "s3cret"})
		g.Expect(err).NotTo(HaveOccurred())
		d, err := defaults.Read(ctx, mgmt.Client)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Username).To(Equal("robot"))
		g.Expect(d.Password).To(Equal("s3cret"))
		g.Expect(d.PublicKey).NotTo(BeNil(), "the key written before is kept")
		// Back to the registry's credentials for the other tests.
		cm := &corev1.ConfigMap{}
		g.Expect(mgmt.Client.Get(ctx, defaults.Key, cm)).To(Succeed())
		cm.Data[packagesv1.DefaultsCredentialsSecretKey] = credentialsSecret
		g.Expect(mgmt.Client.Update(ctx, cm)).To(Succeed())
	})

	t.Run("install packagecontroller reaches a registry on this machine over plain HTTP and says so", func(t *testing.T) {
		g := NewWithT(t)
		d, err := defaults.Read(ctx, mgmt.Client)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(d.Source).NotTo(BeNil())
		// The other tests reach the registry over TLS: put package-defaults back as it was.
		before := &corev1.ConfigMap{}
		g.Expect(mgmt.Client.Get(ctx, defaults.Key, before)).To(Succeed())
		t.Cleanup(func() {
			cm := &corev1.ConfigMap{}
			if err := mgmt.Client.Get(ctx, defaults.Key, cm); err != nil {
				t.Error(err)
				return
			}
			cm.Data = before.Data
			if err := mgmt.Client.Update(ctx, cm); err != nil {
				t.Error(err)
			}
		})
		var out bytes.Buffer
		loud := &client.Client{Out: &out}
		// The source the other tests use, written again: only the plain HTTP default is new.
		_, err = loud.InstallPackageController(ctx, mgmtKubeconfig, client.PackageControllerOptions{
			Cluster: "w-cli", Registry: d.Source.Registry, Repository: d.Source.Repository,
		})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out.String()).To(Equal("Registry " + d.Source.Registry + " is on this machine: reaching it over plain HTTP (--plain-http=false for TLS)\n"))
		cm := &corev1.ConfigMap{}
		g.Expect(mgmt.Client.Get(ctx, defaults.Key, cm)).To(Succeed())
		g.Expect(cm.Data).To(HaveKeyWithValue(packagesv1.DefaultsPlainHTTPKey, "true"))
	})

	t.Run("generate package prints a manifest with the schema as comments", func(t *testing.T) {
		g := NewWithT(t)
		out, err := c.GeneratePackage(ctx, mgmtKubeconfig, "w-cli", "hello", "")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(string(out)).To(ContainSubstring("namespace: flotilla-packages-w-cli"))
		g.Expect(string(out)).To(ContainSubstring("# greeting (string)"))
	})

	t.Run("install package with --set installs it into the workload cluster", func(t *testing.T) {
		g := NewWithT(t)
		_, err := c.InstallPackage(ctx, mgmtKubeconfig, client.InstallPackageOptions{
			Cluster: "w-cli", Package: "hello", Name: "hello-cli", Set: []string{"greeting=hola"}, TargetNamespace: "cli",
		})
		g.Expect(err).NotTo(HaveOccurred())
		p, err := c.WaitPackageReady(ctx, mgmtKubeconfig, "w-cli", "hello-cli", timeout)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.Status.CurrentVersion).NotTo(BeEmpty())
		g.Eventually(func(g Gomega) {
			pkgs, err := c.GetPackages(ctx, mgmtKubeconfig, "w-cli")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pkgs).To(HaveLen(1))
			g.Expect(pkgs[0].Status.State).To(Equal(packagesv1.PackageInstalled))
			cm := &corev1.ConfigMap{}
			g.Expect(workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "cli", Name: "hello-cli-config"}, cm)).To(Succeed())
			g.Expect(cm.Data).To(HaveKeyWithValue("greeting", "hola"))
		}, timeout, interval).Should(Succeed())
	})

	t.Run("install package with a config that breaks the schema names the path", func(t *testing.T) {
		g := NewWithT(t)
		_, err := c.InstallPackage(ctx, mgmtKubeconfig, client.InstallPackageOptions{
			Cluster: "w-cli", Package: "hello", Name: "bad", Set: []string{"replicas=lots"},
		})
		g.Expect(err).To(MatchError(ContainSubstring("spec.config.replicas")))
	})

	t.Run("upgrade packages refuses a bundle that does not exist", func(t *testing.T) {
		g := NewWithT(t)
		_, err := c.UpgradePackages(ctx, mgmtKubeconfig, "w-cli", "v1-36-99")
		g.Expect(err).To(MatchError(ContainSubstring("no bundle v1-36-99")))
	})

	t.Run("get packagebundles and packagebundlecontrollers list what the controllers found", func(t *testing.T) {
		g := NewWithT(t)
		bundles, err := c.GetPackageBundles(ctx, mgmtKubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bundles).NotTo(BeEmpty())
		pbcs, err := c.GetPackageBundleControllers(ctx, mgmtKubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		names := []string{}
		for _, p := range pbcs {
			names = append(names, p.Name)
		}
		g.Expect(names).To(ContainElement("w-cli"))
	})

	t.Run("delete package waits until the release is uninstalled", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.DeletePackage(ctx, mgmtKubeconfig, "w-cli", "hello-cli", time.Minute)).To(Succeed())
		err := workload.Client.Get(ctx, ctrlclient.ObjectKey{Namespace: "cli", Name: "hello-cli"}, &appsv1.Deployment{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	})
}
