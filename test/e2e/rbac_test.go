package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/reconcilers/kubeconfigaccess"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/manager"
	"github.com/flotilla-dev/flotilla/pkg/pki"
	"github.com/flotilla-dev/flotilla/pkg/version"
)

// testClusterCreatorRole has user alice, who holds nothing but a client certificate and a
// RoleBinding of flotilla-cluster-creator in namespace team-a, create, list, describe, scale and
// delete workload cluster w1 through `flotilla create cluster --kubeconfig` and the other commands, on a
// real management cluster. The API server, not the test, decides what she may do: everything
// her cluster needs, nothing in flotilla-system, no Secret but w1's kubeconfig.
func testClusterCreatorRole(t *testing.T, f *fleet) {
	g := NewWithT(t)
	ctx := t.Context()
	home, out, admin := f.home, f.out, f.admin

	// The admin lets alice create clusters in team-a, and hands her a client certificate signed by
	// the management cluster's CA.
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}})).To(Succeed())
	g.Expect(admin.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "alice-cluster-creator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: config.ClusterCreatorRoleName},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	})).To(Succeed())
	aliceOut := t.TempDir()
	aliceKubeconfig := userKubeconfig(t, home, client.UserKubeconfigPath(out, "mgmt"), "alice", "team-a", filepath.Join(aliceOut, "alice.kubeconfig"))
	alice, err := client.KubeClient(aliceKubeconfig)
	g.Expect(err).NotTo(HaveOccurred())

	// Alice runs flotilla on her own machine: nothing of the admin's is there.
	var aliceProgress bytes.Buffer
	aliceCLI := newClient(t, t.TempDir(), &aliceProgress)
	w1Spec := teamASpec(t, filepath.Join(aliceOut, "w1.yaml"), 2)

	t.Run("alice creates a workload cluster with create cluster --kubeconfig", func(t *testing.T) {
		g := NewWithT(t)
		start := time.Now()
		err := aliceCLI.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: w1Spec, Kubeconfig: aliceKubeconfig, OutDir: aliceOut})
		t.Logf("create output:\n%s", aliceProgress.String())
		g.Expect(err).NotTo(HaveOccurred())
		t.Logf("w1 Ready in %s", time.Since(start).Round(time.Millisecond))

		w1, err := client.KubeClient(client.UserKubeconfigPath(aliceOut, "w1"))
		g.Expect(err).NotTo(HaveOccurred())
		nodes := &corev1.NodeList{}
		g.Expect(w1.List(ctx, nodes)).To(Succeed())
		g.Expect(nodes.Items).To(HaveLen(2))

		fc := &flotillav1.Cluster{}
		g.Expect(admin.Get(ctx, ctrlclient.ObjectKey{Namespace: "team-a", Name: "w1"}, fc)).To(Succeed())
		g.Expect(fc.Spec.ManagementCluster.Name).To(Equal("mgmt"), "the webhook names the management cluster alice cannot see")
	})

	t.Run("alice lists and describes her clusters", func(t *testing.T) {
		g := NewWithT(t)
		clusters, err := aliceCLI.GetClusters(ctx, aliceKubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(clusters).To(HaveExactElements(HaveField("Name", "w1")))
		var w bytes.Buffer
		g.Expect(client.DescribeCluster(ctx, alice, "team-a", "w1", &w)).To(Succeed())
		g.Expect(w.String()).To(ContainSubstring("MachineDeployment/w1-md-0"))
	})

	t.Run("alice scales her cluster down with upgrade cluster --kubeconfig", func(t *testing.T) {
		g := NewWithT(t)
		aliceProgress.Reset()
		err := aliceCLI.UpgradeWorkloadCluster(ctx, client.UpgradeWorkloadClusterOptions{
			File: teamASpec(t, filepath.Join(aliceOut, "w1-scaled.yaml"), 1), Kubeconfig: aliceKubeconfig, OutDir: aliceOut,
		})
		t.Logf("upgrade output:\n%s", aliceProgress.String())
		g.Expect(err).NotTo(HaveOccurred())
		w1, err := client.KubeClient(client.UserKubeconfigPath(aliceOut, "w1"))
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			nodes := &corev1.NodeList{}
			g.Expect(w1.List(ctx, nodes)).To(Succeed())
			g.Expect(nodes.Items).To(HaveLen(1))
		}, time.Minute, time.Second).Should(Succeed())
	})

	t.Run("alice sees nothing in flotilla-system", func(t *testing.T) {
		inSystem := ctrlclient.InNamespace(manager.Namespace)
		for name, read := range map[string]func() error{
			"list Secrets":    func() error { return alice.List(ctx, &corev1.SecretList{}, inSystem) },
			"list ConfigMaps": func() error { return alice.List(ctx, &corev1.ConfigMapList{}, inSystem) },
			"get the version ConfigMap": func() error {
				return alice.Get(ctx, ctrlclient.ObjectKey{Namespace: manager.Namespace, Name: version.ConfigMapName}, &corev1.ConfigMap{})
			},
			"list Pods":              func() error { return alice.List(ctx, &corev1.PodList{}, inSystem) },
			"list Leases":            func() error { return alice.List(ctx, &coordinationv1.LeaseList{}, inSystem) },
			"list the inventory":     func() error { return alice.List(ctx, &clusterctlv1.ProviderList{}, inSystem) },
			"list Flotilla Clusters": func() error { return alice.List(ctx, &flotillav1.ClusterList{}, inSystem) },
		} {
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				g.Expect(apierrors.IsForbidden(read())).To(BeTrue(), "%s in %s", name, manager.Namespace)
			})
		}
	})

	t.Run("alice reads no Secret but her cluster's kubeconfig", func(t *testing.T) {
		g := NewWithT(t)
		get := func(namespace, name string) error {
			return alice.Get(ctx, ctrlclient.ObjectKey{Namespace: namespace, Name: name}, &corev1.Secret{})
		}
		g.Expect(get("team-a", "w1-kubeconfig")).To(Succeed())
		g.Expect(apierrors.IsForbidden(get("team-a", "w1-ca"))).To(BeTrue(), "her own cluster's CA")
		g.Expect(apierrors.IsForbidden(get("default", "mgmt-ca"))).To(BeTrue(), "another cluster's CA")
		g.Expect(apierrors.IsForbidden(get("default", "mgmt-kubeconfig"))).To(BeTrue(), "the management cluster's kubeconfig")
		g.Expect(apierrors.IsForbidden(alice.List(ctx, &corev1.SecretList{}, ctrlclient.InNamespace("team-a")))).To(BeTrue())
		g.Expect(apierrors.IsForbidden(alice.List(ctx, &flotillav1.ClusterList{}))).To(BeTrue(), "Clusters of every namespace")
	})

	t.Run("an incompatible CLI is refused before it acts", func(t *testing.T) {
		g := NewWithT(t)
		versionCM := &corev1.ConfigMap{}
		key := ctrlclient.ObjectKey{Namespace: version.PublicNamespace, Name: version.ConfigMapName}
		g.Expect(admin.Get(ctx, key, versionCM)).To(Succeed())
		recorded := versionCM.Data[version.ConfigMapKey]
		g.Expect(recorded).NotTo(BeEmpty())
		// As if the management cluster had been upgraded to a release.
		versionCM.Data[version.ConfigMapKey] = "v9.9.0"
		g.Expect(admin.Update(ctx, versionCM)).To(Succeed())
		defer func() {
			versionCM.Data[version.ConfigMapKey] = recorded
			g.Expect(admin.Update(context.Background(), versionCM)).To(Succeed())
		}()

		err := aliceCLI.DeleteWorkloadCluster(ctx, client.DeleteWorkloadClusterOptions{Name: "w1", Namespace: "team-a", Kubeconfig: aliceKubeconfig, OutDir: aliceOut})
		var incompatible *client.IncompatibleVersionError
		g.Expect(errors.As(err, &incompatible)).To(BeTrue(), "error %v", err)
		g.Expect(err.Error()).To(ContainSubstring("which runs Flotilla v9.9.0"))
		g.Expect(admin.Get(ctx, ctrlclient.ObjectKey{Namespace: "team-a", Name: "w1"}, &flotillav1.Cluster{})).To(Succeed(), "w1 is still there")
	})

	t.Run("alice deletes her cluster, and the access to its kubeconfig goes with it", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(aliceCLI.DeleteWorkloadCluster(ctx, client.DeleteWorkloadClusterOptions{
			Name: "w1", Namespace: "team-a", Kubeconfig: aliceKubeconfig, OutDir: aliceOut,
		})).To(Succeed())
		g.Eventually(func() bool {
			err := admin.Get(ctx, ctrlclient.ObjectKey{Namespace: "team-a", Name: kubeconfigaccess.RoleName}, &rbacv1.Role{})
			return apierrors.IsNotFound(err)
		}, 30*time.Second, 200*time.Millisecond).Should(BeTrue())
	})
}

// teamASpec writes the spec of workload cluster w1 in namespace team-a, with workers workers, to
// path.
func teamASpec(t *testing.T, path string, workers int32) string {
	t.Helper()
	generated, err := spec.Generate(spec.GenerateOptions{Name: "w1", Provider: "local", Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	generated = []byte(strings.ReplaceAll(string(generated), "namespace: default", "namespace: team-a"))
	if err := os.WriteFile(path, generated, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// userKubeconfig writes to path a kubeconfig for user name, authenticated by a client certificate
// signed by the CA of the local management cluster whose admin kubeconfig is adminKubeconfig,
// with namespace as its context's namespace.
func userKubeconfig(t *testing.T, home, adminKubeconfig, name, namespace, path string) string {
	t.Helper()
	pkiDir := filepath.Join(home, "clusters", "mgmt", "pki")
	ca, err := pki.LoadKeyPair(filepath.Join(pkiDir, "ca.crt"), filepath.Join(pkiDir, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.NewClientCert(ca, name)
	if err != nil {
		t.Fatal(err)
	}
	adminCfg, err := client.RESTConfig(adminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	data, err := pki.Kubeconfig("mgmt", adminCfg.Host, ca.CertPEM, name, cert)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.Load(data)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Contexts[cfg.CurrentContext].Namespace = namespace
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
