package client_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cli/client"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/config"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/pkg/version"
)

func TestCheckVersions(t *testing.T) {
	const pseudo = "v0.3.1-0.20260102150405-abcdef123456"
	tests := []struct {
		name          string
		cli, cluster  string
		access        client.Access
		wantErr       []string // substrings of the refusal; none: no refusal
		wantWarning   []string // substrings of the warning; none: no warning
		wantNoWarning bool
	}{
		{name: "the same release is compatible", cli: "v0.4.1", cluster: "v0.4.1", access: client.Mutating, wantNoWarning: true},
		{name: "releases of the same minor are compatible, whichever is newer", cli: "v0.4.0", cluster: "v0.4.3", access: client.Mutating, wantNoWarning: true},
		{name: "a release candidate works with the release of its minor", cli: "v0.4.0-rc.1", cluster: "v0.4.0", access: client.Mutating, wantNoWarning: true},
		{name: "an older minor is refused and told which CLI to use", cli: "v0.3.2", cluster: "v0.4.0", access: client.Mutating,
			wantErr: []string{"flotilla v0.3.2 is not compatible", "runs Flotilla v0.4.0", "within one minor version", "use flotilla v0.4.x"}},
		{name: "a newer minor is refused and told to upgrade the management cluster first", cli: "v0.5.0", cluster: "v0.4.0", access: client.Mutating,
			wantErr: []string{"use flotilla v0.4.x", "flotilla upgrade cluster"}},
		{name: "another major is refused", cli: "v1.4.0", cluster: "v0.4.0", access: client.Mutating, wantErr: []string{"within one minor version"}},
		{name: "a read-only command only warns about another minor", cli: "v0.3.2", cluster: "v0.4.0", access: client.ReadOnly,
			wantWarning: []string{"not compatible", "reading anyway"}},
		{name: "a development build is refused by a release", cli: "v0.0.0-dev", cluster: "v0.4.0", access: client.Mutating,
			wantErr: []string{"a development build works only with development builds"}},
		{name: "a release is refused by a development build", cli: "v0.3.1", cluster: pseudo, access: client.Mutating,
			wantErr: []string{"a development build works only with development builds", "built from the same source"}},
		{name: "a pseudo-version is a development build even when based on the same minor", cli: "v0.3.0", cluster: pseudo, access: client.Mutating,
			wantErr: []string{"development build"}},
		{name: "two development builds are compatible, with a warning when they differ", cli: "v0.0.0-dev", cluster: pseudo, access: client.Mutating,
			wantWarning: []string{"different development builds"}},
		{name: "a manager started without a version counts as a development build", cli: "v0.0.0-dev", cluster: "unknown", access: client.Mutating,
			wantWarning: []string{"different development builds"}},
		{name: "the same development build is compatible", cli: "v0.0.0-dev", cluster: "v0.0.0-dev", access: client.Mutating, wantNoWarning: true},
		{name: "a cluster that records no version is not a management cluster", cli: "v0.4.0", cluster: "", access: client.Mutating,
			wantErr: []string{"does not point to a Flotilla management cluster", "no Flotilla manager has started on it", "kube-public/flotilla-version"}},
		{name: "a read-only command warns about a cluster that records no version", cli: "v0.4.0", cluster: "", access: client.ReadOnly,
			wantWarning: []string{"does not point to a Flotilla management cluster"}},
		{name: "a version that does not parse is refused", cli: "main", cluster: "v0.4.0", access: client.Mutating,
			wantErr: []string{"not semantic"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			warning, err := client.CheckVersions(tt.cli, tt.cluster, tt.access)
			if len(tt.wantErr) > 0 {
				var incompatible *client.IncompatibleVersionError
				g.Expect(errors.As(err, &incompatible)).To(BeTrue(), "error %v", err)
				for _, want := range tt.wantErr {
					g.Expect(err.Error()).To(ContainSubstring(want))
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			for _, want := range tt.wantWarning {
				g.Expect(warning).To(ContainSubstring(want))
			}
			if tt.wantNoWarning {
				g.Expect(warning).To(BeEmpty())
			}
		})
	}
}

// TestCommandsCheckTheManagementClustersVersionFirst runs the commands against a real API server
// whose recorded Flotilla version the test sets.
func TestCommandsCheckTheManagementClustersVersionFirst(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	e, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "mgmt.kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, e.Kubeconfig, 0o600)).To(Succeed())
	specFile := filepath.Join(dir, "w1.yaml")
	generated, err := spec.Generate(spec.GenerateOptions{Name: "w1", Provider: "local", Workers: 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(specFile, generated, 0o600)).To(Succeed())

	var out bytes.Buffer
	c, err := client.New(t.TempDir(), t.TempDir(), &out)
	g.Expect(err).NotTo(HaveOccurred())
	kc, err := client.KubeClient(kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	clusterCount := func() int {
		list := &flotillav1.ClusterList{}
		g.Expect(e.Client.List(ctx, list)).To(Succeed())
		return len(list.Items)
	}
	record := func(v string) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: version.PublicNamespace, Name: version.ConfigMapName}}
		_, err := controllerutil.CreateOrPatch(ctx, e.Client, cm, func() error {
			cm.Data = map[string]string{version.ConfigMapKey: v}
			return nil
		})
		g.Expect(err).NotTo(HaveOccurred())
	}
	create := func() error {
		return c.CreateWorkloadCluster(ctx, client.CreateWorkloadClusterOptions{File: specFile, Kubeconfig: kubeconfig, OutDir: dir})
	}

	t.Run("create refuses a cluster that records no version, and creates nothing", func(t *testing.T) {
		g := NewWithT(t)
		c.Version = "v0.4.0"
		err := create()
		g.Expect(err).To(MatchError(ContainSubstring(kubeconfig + " does not point to a Flotilla management cluster")))
		g.Expect(clusterCount()).To(BeZero())
	})

	record("v0.4.1")

	t.Run("create refuses a CLI of another minor version, and creates nothing", func(t *testing.T) {
		g := NewWithT(t)
		c.Version = "v0.3.0"
		err := create()
		var incompatible *client.IncompatibleVersionError
		g.Expect(errors.As(err, &incompatible)).To(BeTrue(), "error %v", err)
		g.Expect(err.Error()).To(ContainSubstring("flotilla v0.3.0 is not compatible with the management cluster of " + kubeconfig + ", which runs Flotilla v0.4.1"))
		g.Expect(clusterCount()).To(BeZero())
		g.Expect(out.String()).NotTo(ContainSubstring("SetupAndValidate"), "no phase ran")
	})

	t.Run("delete refuses before it looks for the cluster", func(t *testing.T) {
		g := NewWithT(t)
		c.Version = "v0.3.0"
		err := c.DeleteWorkloadCluster(ctx, client.DeleteWorkloadClusterOptions{Name: "w1", Namespace: "default", Kubeconfig: kubeconfig, OutDir: dir})
		var incompatible *client.IncompatibleVersionError
		g.Expect(errors.As(err, &incompatible)).To(BeTrue(), "error %v", err)
	})

	t.Run("get warns and lists", func(t *testing.T) {
		g := NewWithT(t)
		c.Version = "v0.3.0"
		out.Reset()
		clusters, err := c.GetClusters(ctx, kubeconfig)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(clusters).To(BeEmpty())
		g.Expect(out.String()).To(ContainSubstring("Warning: flotilla v0.3.0 is not compatible with the management cluster, which runs Flotilla v0.4.1"))
	})

	t.Run("a CLI of the same minor version passes without a word", func(t *testing.T) {
		g := NewWithT(t)
		c.Version = "v0.4.0"
		out.Reset()
		g.Expect(c.CheckCompatibility(ctx, kc, kubeconfig, client.Mutating)).To(Succeed())
		g.Expect(out.String()).To(BeEmpty())
	})

	t.Run("a user who may see nothing in flotilla-system reads the public version", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(config.InstallClusterCreatorRBAC(ctx, e.Client)).To(Succeed())
		user, err := e.AddUser("carol")
		g.Expect(err).NotTo(HaveOccurred())
		userKubeconfig := filepath.Join(dir, "carol.kubeconfig")
		g.Expect(os.WriteFile(userKubeconfig, user.Kubeconfig, 0o600)).To(Succeed())
		userClient, err := client.KubeClient(userKubeconfig)
		g.Expect(err).NotTo(HaveOccurred())

		g.Eventually(func() (string, error) {
			return client.ManagementVersion(ctx, userClient, userKubeconfig)
		}).Should(Equal("v0.4.1"))
		err = userClient.Get(ctx, ctrlclient.ObjectKey{Namespace: flotillav1.SystemNamespace, Name: version.ConfigMapName}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "reading flotilla-system: %v", err)
	})
}
