package client

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flotillav1 "github.com/flotilla-dev/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-dev/flotilla/cluster/spec"
	"github.com/flotilla-dev/flotilla/internal/testenv"
	"github.com/flotilla-dev/flotilla/pkg/binaries"
	"github.com/flotilla-dev/flotilla/pkg/nodenet"
	"github.com/flotilla-dev/flotilla/pkg/process"
	"github.com/flotilla-dev/flotilla/pkg/version"
)

// localManagement plays a management cluster "mgmt" that runs on this machine (a real API
// server; its manager a stand-in process, since nothing past SetupAndValidate may run) with the
// binary cache binRoot, and returns a client of its Home, its kubeconfig, and a directory.
func localManagement(t *testing.T, binRoot string) (c *Client, e *testenv.Environment, out *bytes.Buffer, kubeconfig, dir string) {
	g := NewWithT(t)
	ctx := context.Background()
	e, err := testenv.Start(testenv.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	out = &bytes.Buffer{}
	c, err = New(t.TempDir(), binRoot, out)
	g.Expect(err).NotTo(HaveOccurred())
	c.Version = "v0.0.0-dev"

	// The management cluster "mgmt", as this machine's flotilla created it: its Cluster, the
	// version its manager records, its admin kubeconfig under the Home, and a running manager.
	g.Expect(e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: version.PublicNamespace}})).To(Or(Succeed(), MatchError(ContainSubstring("already exists"))))
	g.Expect(e.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: version.PublicNamespace, Name: version.ConfigMapName},
		Data:       map[string]string{version.ConfigMapKey: c.Version},
	})).To(Succeed())
	g.Expect(e.Client.Create(ctx, &flotillav1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "mgmt", Namespace: "default"},
		Spec: flotillav1.ClusterSpec{
			Management: true, KubernetesVersion: "1.36", ControlPlane: flotillav1.ControlPlaneConfiguration{Count: 1},
			DatacenterRef:     flotillav1.Ref{Kind: flotillav1.LocalDatacenterConfigKind, Name: "mgmt"},
			ManagementCluster: flotillav1.ManagementClusterRef{Name: "mgmt"},
		},
	})).To(Succeed())
	g.Expect(os.MkdirAll(c.clusterDir("mgmt"), 0o700)).To(Succeed())
	g.Expect(os.WriteFile(c.localKubeconfigPath("mgmt"), e.Kubeconfig, 0o600)).To(Succeed())
	_, err = c.keeper("mgmt").Start(ctx, process.Spec{Name: managerProcess, Path: "/bin/sleep", Args: []string{"600"}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = c.keeper("mgmt").Stop(context.Background(), managerProcess, 5*time.Second) })

	dir = t.TempDir()
	kubeconfig = filepath.Join(dir, "mgmt.kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, e.Kubeconfig, 0o600)).To(Succeed())
	return c, e, out, kubeconfig, dir
}

// TestCreatingALocalClusterWhoseBinariesAreNotBuiltFailsAtSetupAndValidate: creating a workload
// cluster at a Kubernetes version whose programs are not built fails at once, saying how to
// build them, and creates nothing.
func TestCreatingALocalClusterWhoseBinariesAreNotBuiltFailsAtSetupAndValidate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	binRoot := t.TempDir()
	c, e, out, kubeconfig, dir := localManagement(t, binRoot)

	specFile := filepath.Join(dir, "w1.yaml")
	generated, err := spec.Generate(spec.GenerateOptions{Name: "w1", Provider: spec.ProviderLocal, KubernetesVersion: "1.35", Workers: 1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(specFile, generated, 0o600)).To(Succeed())

	start := time.Now()
	err = c.CreateWorkloadCluster(ctx, CreateWorkloadClusterOptions{File: specFile, Kubeconfig: kubeconfig, OutDir: dir})
	g.Expect(err).To(MatchError(ContainSubstring(`management cluster "mgmt" runs on this machine and cannot start Kubernetes v1.35.4`)))
	g.Expect(err).To(MatchError(ContainSubstring("run: flotilla binaries build v1.35.4 --bin-dir " + binRoot)))
	g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second), "it fails at once, without waiting for the cluster")
	g.Expect(out.String()).To(ContainSubstring("SetupAndValidate"))
	g.Expect(out.String()).NotTo(ContainSubstring("CreateWorkloadCluster"), "no phase after SetupAndValidate ran")
	list := &flotillav1.ClusterList{}
	g.Expect(e.Client.List(ctx, list)).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1), "only the management cluster exists: nothing was applied")
}

// TestCreatingALocalClusterRefusesWhatThisMachineCannotGiveIt: with the control plane programs
// built, a taken endpoint port, real nodes whose programs are not built, and a node network this
// machine already uses are each refused at SetupAndValidate, naming the field, and nothing is
// applied.
func TestCreatingALocalClusterRefusesWhatThisMachineCannotGiveIt(t *testing.T) {
	binRoot := t.TempDir()
	writePrograms(t, filepath.Join(binRoot, "v1.36.3"), binaries.Names...)
	c, e, _, kubeconfig, dir := localManagement(t, binRoot)

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = taken.Close() })
	takenPort := taken.Addr().(*net.TCPAddr).Port

	tests := []struct {
		name     string
		real     int32
		edit     func(string) string
		programs bool
		hostNet  bool
		want     []string
	}{
		{
			name: "a taken endpoint port is refused, naming the field",
			edit: func(s string) string {
				return strings.Replace(s, "    # endpoint:\n    #   host: 127.0.0.1\n    #   port: 6443\n",
					"    endpoint:\n      host: 127.0.0.1\n      port: "+strconv.Itoa(takenPort)+"\n", 1)
			},
			want: []string{"spec.controlPlane.endpoint", "is in use on this machine", "choose another port"},
		},
		{
			name: "real nodes whose programs are not built are refused with the command that builds them",
			real: 1,
			want: []string{"has real nodes, whose programs are not built", "flotilla binaries build v1.36.3 --bin-dir " + binRoot + " --nodes"},
		},
		{
			name: "a node network this machine uses is refused, naming the field",
			real: 1, programs: true, hostNet: true,
			want: []string{"spec.nodeNetwork of LocalDatacenterConfig w1", "address range in use on this machine", "name a free private range"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			if tt.programs {
				writePrograms(t, filepath.Join(binRoot, "v1.36.3"), binaries.NodeNames...)
			}
			generated, err := spec.Generate(spec.GenerateOptions{Name: "w1", Provider: spec.ProviderLocal, Workers: 1, RealWorkers: tt.real})
			g.Expect(err).NotTo(HaveOccurred())
			text := string(generated)
			if tt.edit != nil {
				text = tt.edit(text)
			}
			if tt.hostNet {
				if os.Geteuid() != 0 {
					t.Skip("a node network is made by root (real nodes need it)")
				}
				network := usedNetwork(t)
				text = strings.Replace(text, "  # nodeNetwork: 10.200.0.0/24\n", "  nodeNetwork: "+network+"\n", 1)
			}
			specFile := filepath.Join(dir, "w1.yaml")
			g.Expect(os.WriteFile(specFile, []byte(text), 0o600)).To(Succeed())
			err = c.CreateWorkloadCluster(ctx, CreateWorkloadClusterOptions{File: specFile, Kubeconfig: kubeconfig, OutDir: dir})
			for _, want := range tt.want {
				g.Expect(err).To(MatchError(ContainSubstring(want)))
			}
			list := &flotillav1.ClusterList{}
			g.Expect(e.Client.List(ctx, list)).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1), "only the management cluster exists: nothing was applied")
		})
	}
}

// writePrograms writes stand-ins for the named programs into dir.
func writePrograms(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// usedNetwork makes this machine use a free node network (the bridge of another cluster) for the
// test, and returns it.
func usedNetwork(t *testing.T) string {
	t.Helper()
	network, err := nodenet.ChooseNetwork()
	if err != nil {
		t.Fatal(err)
	}
	other := nodenet.Cluster{ID: nodenet.ClusterID(t.TempDir()), Network: network}
	t.Cleanup(func() { _ = nodenet.DeleteCluster(context.Background(), other.ID) })
	if err := nodenet.EnsureCluster(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	return network.String()
}
